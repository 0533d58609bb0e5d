"""The README's benchmark figures, generated from the benchmarks' own output.

    python benchmarks/figures.py run [NAME ...] [--with-replay]   # run benchmarks, write benchmarks/results/
    python benchmarks/figures.py readme [--check]                 # render results/*.json into README.md

Rules:
- A benchmark computes each figure once, prints it and, given ``--json PATH``, writes the same numbers
  with ``write_results``: one small JSON per benchmark in ``benchmarks/results/<name>.json`` holding
  the benchmark's name, when it ran (UTC), the Python version, the load average at its start and end,
  the CPU count, its options, and its headline figures (``Figure``: what, value, unit, min / median /
  max where it has them, the peer or baseline and the ratio to it, the target and whether it was met).
- Nobody types a figure into README.md: ``readme`` rewrites only the text between
  ``<!-- figures:start -->`` and ``<!-- figures:end -->`` with ``render`` of the results, and
  ``readme --check`` (run by tests/test_bench_figures.py) fails when that text differs.
- Rendering is deterministic: results in the order of ``BENCHMARKS``, numbers in a fixed format.
- The replay benchmark takes hours and the tables benchmark (its 10M-record log) many minutes; ``run``
  runs them only with ``--with-replay``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
README = ROOT / "README.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"

# Benchmark -> the options `run` passes (besides --json), in the README's order.
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "codec_bench": (),
    "rejected_frame_bench": (),
    "failover_bench": (),
    "small_batch_bench": (),
    "channel_bench": (),
    "sim_bench": (),
    "controller_bench": (),
    "server_attack_bench": (),
    "registration_bench": (),
    "replay_abuse_bench": (),
    "rows_bench": (),
    "read_bench": (),
    "replay_bench": (),
    "sizes_bench": (),
    "tables_bench": ("--reuse-big",),
}
SLOW = frozenset({"replay_bench", "sizes_bench", "tables_bench", "controller_bench"})  # run only with --with-replay

RESULT_KEYS = frozenset(
    {"benchmark", "started", "when", "seconds", "python", "load_average_start", "load_average_end", "nproc",
     "options", "figures"}
)
FIGURE_KEYS = frozenset(
    {"what", "value", "unit", "min", "median", "max", "peer", "peer_value", "ratio", "ratio_of", "target", "met"}
)

_STARTED = (time.time(), os.getloadavg())  # when the benchmark that imports this module began


def processor() -> str:
    """The processor's model name (/proc/cpuinfo), else platform's: printed and recorded beside the
    figures, since the interpreter's speed and the floors' rates differ by machine, and so do ratios."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown processor"


@attrs.frozen
class Figure:
    """One headline figure, as the benchmark printed it."""

    what: str  # a short human label: what was measured, with its size
    value: float
    unit: str  # "s", "MiB", "batches/s", ...; the peer's value has the same unit
    min: float | None = None
    median: float | None = None
    max: float | None = None
    peer: str | None = None  # the peer or baseline, e.g. "kio 0.5.0" (measured in the same run unless it says)
    peer_value: float | None = None
    ratio: float | None = None
    ratio_of: str | None = None  # what the ratio compares, e.g. "medians", "best runs"
    target: str | None = None  # e.g. "ratio <= 0.25x"
    met: bool | None = None


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write_results(path: str | None, benchmark: str, figures: Iterable[Figure], options: Mapping[str, Any]) -> None:
    """Write `figures` as the JSON of `benchmark` to `path` (nothing when path is None)."""
    if path is None:
        return
    now = time.time()
    doc = {
        "benchmark": benchmark,
        "started": _utc(_STARTED[0]),
        "when": _utc(now),
        "seconds": round(now - _STARTED[0], 1),
        "python": platform.python_version(),
        "load_average_start": [round(x, 2) for x in _STARTED[1]],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "nproc": os.cpu_count(),
        "options": {k: v for k, v in sorted(options.items()) if k != "json"},
        "figures": [attrs.asdict(f) for f in figures],
    }
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")  # str: Path options


# ---------------------------------------------------------------------------- reading and checking


def check_result(doc: Any, where: str) -> None:
    """Raise ValueError naming `where` and the key when `doc` is not a results document."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    missing = RESULT_KEYS - doc.keys()
    if missing:
        raise ValueError(f"{where}: missing keys {sorted(missing)}")
    if not isinstance(doc["figures"], list) or not doc["figures"]:
        raise ValueError(f"{where}: 'figures' must be a non-empty list")
    for i, fig in enumerate(doc["figures"]):
        missing = FIGURE_KEYS - (fig.keys() if isinstance(fig, dict) else set())
        if missing:
            raise ValueError(f"{where}: figures[{i}] lacks keys {sorted(missing)}")
        if not isinstance(fig["value"], int | float) or not isinstance(fig["what"], str):
            raise ValueError(f"{where}: figures[{i}] needs a string 'what' and a number 'value'")


def load_results(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every results JSON in `directory` (RESULTS by default), checked, in BENCHMARKS order (others after)."""
    docs = []
    for path in sorted((directory or RESULTS).glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        check_result(doc, str(path))
        docs.append(doc)
    return _ordered(docs)


def _ordered(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rank = {name: i for i, name in enumerate(BENCHMARKS)}
    return sorted(docs, key=lambda d: (rank.get(d["benchmark"], len(rank)), d["benchmark"]))


# ---------------------------------------------------------------------------- rendering


def num(v: float) -> str:
    """A number as the table shows it: about three significant digits, thousands separated."""
    a = abs(v)
    for bound, fmt in ((1000, ",.0f"), (100, ".0f"), (10, ".1f"), (1, ".2f"), (0.01, ".3f")):
        if a >= bound:
            return format(v, fmt)
    return format(v, ".3g")


def _with_unit(v: float, unit: str) -> str:
    return f"{num(v)}{unit}" if unit == "x" else f"{num(v)} {unit}"


def _cells(fig: Mapping[str, Any]) -> list[str]:
    unit = fig["unit"]
    ours = _with_unit(fig["value"], unit)
    if fig["min"] is not None and fig["max"] is not None:
        ours += f" ({num(fig['min'])}-{num(fig['max'])})"
    peer = fig["peer"] or ""
    if fig["peer_value"] is not None:
        peer = f"{peer} {_with_unit(fig['peer_value'], unit)}".strip()
    ratio = "" if fig["ratio"] is None else f"{num(fig['ratio'])}x"
    if ratio and fig["ratio_of"]:
        ratio += f" ({fig['ratio_of']})"
    target = fig["target"] or ""
    if target and fig["met"] is not None:
        target += ": met" if fig["met"] else ": NOT met"
    return [fig["what"], ours, peer, ratio, target]


def render(docs: Sequence[dict[str, Any]]) -> str:
    """The Markdown between the markers: when and where, then one row per figure."""
    docs = _ordered(docs)
    if not docs:
        raise ValueError("no benchmark results to render")
    starts = sorted(d["started"] for d in docs)
    ends = sorted(d["when"] for d in docs)
    loads = [x for d in docs for x in (d["load_average_start"][0], d["load_average_end"][0])]
    pythons = ", ".join(sorted({d["python"] for d in docs}))
    cpus = ", ".join(str(n) for n in sorted({d["nproc"] for d in docs}))
    day0, day1 = starts[0][:10], ends[-1][:10]
    days = day0 if day0 == day1 else f"{day0} to {day1}"
    lines = [
        f"Measured by `python benchmarks/figures.py run` on {days}, {starts[0][11:16]}-{ends[-1][11:16]} UTC, "
        f"Python {pythons}, {cpus} CPUs shared with other work (1-minute load average "
        f"{num(min(loads))}-{num(max(loads))} during the runs). ctrlbatch: the median (min-max) "
        "where a figure is measured several times; each benchmark's figures and options are in `benchmarks/results/`.",
        "",
        "| what | ctrlbatch | peer, same run | ratio | target |",
        "|---|---|---|---|---|",
    ]
    for d in docs:
        for fig in d["figures"]:
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(fig)) + " |")
    return "\n".join(lines)


def replace_between_markers(text: str, body: str) -> str:
    """`text` with the lines between the START and END markers replaced by `body`; nothing else changes."""
    i, j = text.find(START), text.find(END)
    if i < 0 or j < 0 or j < i or text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"README.md needs exactly one {START} followed by one {END} around the figures table")
    head = text[: i + len(START)]
    return f"{head}\n{body}\n{text[j:]}"


def current_table(text: str) -> str:
    """The text between the markers (without the newlines next to them)."""
    i, j = text.find(START), text.find(END)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"README.md has no {START} ... {END} region")
    return text[i + len(START) : j].strip("\n")


# ---------------------------------------------------------------------------- commands


def cmd_run(names: list[str], with_replay: bool) -> int:
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}")
    todo = names or [n for n in BENCHMARKS if with_replay or n not in SLOW]
    RESULTS.mkdir(exist_ok=True)
    failed = []
    t0 = time.monotonic()
    for name in todo:
        out = RESULTS / f"{name}.json"
        cmd = [sys.executable, str(HERE / f"{name}.py"), *BENCHMARKS[name], "--json", str(out)]
        print(f"== {name} (load average {os.getloadavg()[0]:.2f})", flush=True)
        t = time.monotonic()
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            failed.append(name)
        print(f"== {name}: {time.monotonic() - t:.0f} s", flush=True)
    print(f"ran {len(todo)} benchmark(s) in {time.monotonic() - t0:.0f} s" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


def cmd_readme(check: bool) -> int:
    text = README.read_text(encoding="utf-8")
    table = render(load_results())
    if check:
        if current_table(text) != table:
            print("README.md's figures differ from benchmarks/results/*.json: run "
                  "`python benchmarks/figures.py readme`", file=sys.stderr)
            return 1
        return 0
    new = replace_between_markers(text, table)
    if new != text:
        README.write_text(new, encoding="utf-8")
        print("README.md: figures rewritten")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the benchmarks, writing benchmarks/results/<name>.json")
    run.add_argument("names", nargs="*", help="only these benchmarks (default: all but the replay's)")
    run.add_argument("--with-replay", action="store_true", help="also run replay_bench (hours)")
    readme = sub.add_parser("readme", help="render the results into README.md between the markers")
    readme.add_argument("--check", action="store_true", help="exit 1 if README.md differs from the results")
    args = ap.parse_args(argv)
    try:
        if args.command == "run":
            return cmd_run(args.names, args.with_replay)
        return cmd_readme(args.check)
    except ValueError as e:
        print(f"figures: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())


def cpu_timed(calls: list[tuple[Any, Any]], runs: int) -> list[list[float]]:
    """Each (function, argument)'s CPU times over runs, interleaved (one run of each in turn): CPU
    time, not wall time, so that other processes on a shared machine disturb the ratio less."""
    out: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for (fn, arg), times in zip(calls, out, strict=True):
            t = time.process_time()
            fn(arg)
            times.append(time.process_time() - t)
    return out
