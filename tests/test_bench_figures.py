"""README.md's benchmark figures are the rendering of benchmarks/results/*.json (benchmarks/figures.py).

Rules: nobody types a figure into README.md; the table between the figures markers is what
`python benchmarks/figures.py readme` renders from the results the benchmarks wrote, each results
file has the keys figures.py documents, and rendering depends on nothing but the results' content.
Missing markers are a failure, not a skip.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]


def _load_figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ctrlbatch_bench_figures", ROOT / "benchmarks" / "figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


figures = _load_figures()


def _readme() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [m for m in (figures.START, figures.END) if m not in text]
    if missing:
        pytest.fail(f"README.md lacks the marker(s) {missing}: the lead puts {figures.START} and {figures.END} "
                    "around the benchmark figures table, then `python benchmarks/figures.py readme` fills it")
    return text


def _results() -> list[dict[str, Any]]:
    return figures.load_results()  # type: ignore[no-any-return]


def test_readme_table_is_the_rendering_of_the_results() -> None:
    table = figures.current_table(_readme())
    assert table == figures.render(_results()), (
        "README.md's figures differ from benchmarks/results/*.json: run `python benchmarks/figures.py readme`"
    )


def test_readme_check_command_agrees() -> None:
    _readme()
    assert figures.main(["readme", "--check"]) == 0


def test_every_benchmark_has_its_results() -> None:
    wanted = [n for n in figures.BENCHMARKS if n not in figures.SLOW]
    found = {d["benchmark"] for d in _results()}
    assert set(wanted) <= found, f"no results for {sorted(set(wanted) - found)}: run benchmarks/figures.py run"


def test_results_files_have_the_required_keys() -> None:
    paths = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
    assert paths, "benchmarks/results/ holds no results: run `python benchmarks/figures.py run`"
    for path in paths:
        _check_results_file(path)


def _check_results_file(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    figures.check_result(doc, str(path))
    assert doc["benchmark"] == path.stem
    assert doc["nproc"] >= 1 and len(doc["load_average_start"]) == len(doc["load_average_end"]) == 3
    assert doc["started"] <= doc["when"]
    for fig in doc["figures"]:
        assert fig["unit"] and fig["what"]
        assert (fig["met"] is None) == (fig["target"] is None), fig
        assert (fig["ratio"] is None) or (fig["peer_value"] is not None), fig
        if fig["min"] is not None:
            assert fig["min"] <= fig["median"] <= fig["max"], fig
            assert fig["value"] == fig["median"], fig


def test_rendering_is_the_same_twice_and_for_any_file_order() -> None:
    docs = _results()
    assert figures.render(docs) == figures.render(list(reversed(docs))) == figures.render(_results())


# ---------------------------------------------------------------------------- the tool itself, on made-up results


def _doc(name: str, value: float, **fig: Any) -> dict[str, Any]:
    return {
        "benchmark": name, "started": "2026-11-22T21:00:00Z", "when": "2026-11-22T21:01:00Z", "seconds": 60.0,
        "python": "3.11.7", "load_average_start": [1.5, 1.0, 1.0], "load_average_end": [2.25, 1.0, 1.0], "nproc": 2,
        "options": {},
        "figures": [{
            "what": f"{name} thing", "value": value, "unit": "s", "min": None, "median": None, "max": None,
            "peer": None, "peer_value": None, "ratio": None, "ratio_of": None, "target": None, "met": None,
        } | fig],
    }


_DOCS = [
    _doc("codec_bench", 0.183, min=0.18, median=0.183, max=0.2, peer="kio", peer_value=1.61, ratio=0.1137,
         ratio_of="best runs", target="<= 0.25x", met=True),
    _doc("sim_bench", 1234.5, unit="batches/s", target="median >= 10,000/s", met=False),
    _doc("zzz_other", 12.34),
]


@given(st.permutations(_DOCS))
def test_render_does_not_depend_on_order(docs: list[dict[str, Any]]) -> None:
    assert figures.render(docs) == figures.render(_DOCS)


def test_render_rows() -> None:
    lines = figures.render(_DOCS).splitlines()
    assert "2026-11-22, 21:00-21:01 UTC" in lines[0] and "load average 1.50-2.25" in lines[0]
    assert figures.num(0.00123) == "0.00123" and figures.num(-2.5) == "-2.50"
    assert lines[2:] == [
        "| what | ctrlbatch | peer, same run | ratio | target |",
        "|---|---|---|---|---|",
        "| codec_bench thing | 0.183 s (0.180-0.200) | kio 1.61 s | 0.114x (best runs) | <= 0.25x: met |",
        "| sim_bench thing | 1,234 batches/s |  |  | median >= 10,000/s: NOT met |",
        "| zzz_other thing | 12.3 s |  |  |  |",
    ]


_PLAIN = st.text(max_size=40).filter(lambda s: "<!--" not in s)


@given(_PLAIN, _PLAIN, _PLAIN, _PLAIN)
def test_rewrite_changes_only_the_text_between_the_markers(before: str, old: str, new: str, after: str) -> None:
    text = f"{before}{figures.START}\n{old}\n{figures.END}{after}"
    out = figures.replace_between_markers(text, new)
    assert out.startswith(before + figures.START) and out.endswith(figures.END + after)
    assert figures.current_table(out) == new.strip("\n")


@pytest.mark.parametrize("text", ["no markers", f"{figures.END}\n{figures.START}", f"{figures.START}\n"])
def test_rewrite_without_markers_names_them(text: str) -> None:
    with pytest.raises(ValueError, match="figures:start"):
        figures.replace_between_markers(text, "table")


def test_readme_command_rewrites_then_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    results.mkdir()
    for d in _DOCS:
        (results / f"{d['benchmark']}.json").write_text(json.dumps(d))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\ntext\n{figures.START}\n| old | table |\n{figures.END}\nmore\n")
    monkeypatch.setattr(figures, "RESULTS", results)
    monkeypatch.setattr(figures, "README", readme)
    assert figures.main(["readme", "--check"]) == 1
    assert figures.main(["readme"]) == 0
    assert figures.main(["readme", "--check"]) == 0
    text = readme.read_text()
    assert text.startswith(f"# x\n\ntext\n{figures.START}\n") and text.endswith(f"\n{figures.END}\nmore\n")
    assert figures.current_table(text) == figures.render(_DOCS)


def test_write_results_round_trip(tmp_path: Path) -> None:
    fig = figures.Figure(what="w", value=2.0, unit="s", min=1.0, median=2.0, max=3.0, peer="p", peer_value=4.0,
                         ratio=0.5, ratio_of="medians", target="<= 1x", met=True)
    figures.write_results(str(tmp_path / "b.json"), "b", [fig], {"runs": 3, "json": "ignored", "cache": Path("/c")})
    figures.write_results(None, "c", [fig], {})
    [doc] = figures.load_results(tmp_path)
    assert doc["benchmark"] == "b" and doc["options"] == {"cache": "/c", "runs": 3}
    assert doc["figures"] == [{k: getattr(fig, k) for k in figures.FIGURE_KEYS}]


@pytest.mark.parametrize("key", sorted(figures.RESULT_KEYS))
def test_check_result_names_a_missing_key(key: str) -> None:
    doc = _doc("b", 1.0)
    del doc[key]
    with pytest.raises(ValueError, match=f"where.json: missing keys \\['{key}'\\]"):
        figures.check_result(doc, "where.json")


def test_check_result_names_a_figure_without_a_key() -> None:
    doc = _doc("b", 1.0)
    del doc["figures"][0]["ratio"]
    with pytest.raises(ValueError, match=r"figures\[0\] lacks keys \['ratio'\]"):
        figures.check_result(doc, "where.json")


def test_every_benchmark_script_imports() -> None:
    """A benchmark that no longer imports (a helper it took from another script moved) fails
    here, not in the next person's benchmark run."""
    import subprocess

    bench_dir = Path(__file__).resolve().parents[1] / "benchmarks"
    names = sorted(p.stem for p in bench_dir.glob("*_bench.py"))
    assert len(names) >= 10
    code = "import importlib, sys; sys.path.insert(0, sys.argv[1])\nfor n in sys.argv[2:]: importlib.import_module(n)"
    proc = subprocess.run([sys.executable, "-c", code, str(bench_dir), *names], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
