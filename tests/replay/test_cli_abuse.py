"""``ctrlbatch replay`` as a careless or hostile user runs it, as a real process: every OS error
and every non-regular input is one line with the path and exit status 1 (a FIFO never hangs),
an empty log says it is empty, --out never replaces someone else's directory, and SIGTERM or
SIGINT in the middle of a run leave no temporary directory and nothing outside --out touched.
Every process runs under a timeout. Checks of permissions run the command without the
capabilities that let root ignore them (``setpriv --bounding-set -dac_override,...``) when the
tests run as root."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ctrlbatch.replay.log.jsonl import write_jsonl
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.output.output import MARKER

TIMEOUT = 120  # seconds for one process; a hang fails the test instead of blocking the suite
ENV = {
    **os.environ,
    "TZ": "UTC",
    "SPARK_LOCAL_IP": "127.0.0.1",
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
}


UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def ctrlbatch(*args: str, unprivileged: bool = False, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    prefix = UNPRIVILEGED if unprivileged else []
    if prefix:
        assert shutil.which(prefix[0]), "as root, the permission checks need util-linux's setpriv"
    return subprocess.run(
        [*prefix, sys.executable, "-m", "ctrlbatch.cli", "replay", *args],
        capture_output=True, text=True, timeout=TIMEOUT, env=ENV if env is None else env, stdin=subprocess.DEVNULL,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *parts: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("ctrlbatch replay: error: ")
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def test_a_fifo_as_input_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    one_line_error(ctrlbatch(str(fifo), "--engine", "local"), str(fifo), "is a FIFO, not a regular file")
    meta = tmp_path / "data" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    os.mkfifo(meta / "00000000000000000000.log")
    one_line_error(ctrlbatch(str(tmp_path / "data"), "--engine", "local"), "00000000000000000000.log: is a FIFO")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda d: Path("/dev/null"), "/dev/null: is a character device, not a regular file"),
        (lambda d: (d / "a").symlink_to(d / "b") or (d / "b").symlink_to(d / "a") or d / "a",
         "a: Too many levels of symbolic links"),
        (lambda d: (d / "x.log").symlink_to(d / "gone") or d / "x.log", "x.log: a symbolic link to nothing"),
        (lambda d: (d / "__cluster_metadata-0" / "00000000000000000000.log").mkdir(parents=True) or d,
         "00000000000000000000.log: is a directory, not a regular file"),
        (lambda d: (d / "00000000000000000000.log").write_bytes(b"") or d / "00000000000000000000.log",
         "00000000000000000000.log: the file is empty (0 bytes)"),
        (lambda d: (d / "__cluster_metadata-0").mkdir() or (d / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"") or d,
         "the log is empty: its 1 .log segment(s) hold 0 bytes"),
    ],
    ids=["char device", "symlink loop", "dangling symlink", "directory named .log", "empty .log", "empty segments"],
)
def test_odd_inputs_are_one_line(tmp_path: Path, make: Callable[[Path], Path], reason: str) -> None:
    path = make(tmp_path)
    one_line_error(ctrlbatch(str(path), "--engine", "local"), reason)


def test_an_unreadable_input_and_an_unwritable_out_are_one_line(tmp_path: Path, sample_dir: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    shutil.copy(sample_dir / "__cluster_metadata-0" / "00000000000000000000.log", segment)
    segment.chmod(0)
    one_line_error(ctrlbatch(str(segment), "--engine", "local", unprivileged=True), str(segment), "Permission denied")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0)
    one_line_error(ctrlbatch(str(closed / "x.log"), "--engine", "local", unprivileged=True), "Permission denied")
    readonly = tmp_path / "readonly"
    readonly.mkdir(mode=0o555)
    proc = ctrlbatch(str(sample_dir), "--engine", "local", "--out", str(readonly / "out"), unprivileged=True)
    one_line_error(proc, f"--out {readonly / 'out'}: cannot write the output here", "Permission denied")
    assert list(readonly.iterdir()) == []
    closed.chmod(0o700)


def test_out_below_a_regular_file_or_on_a_strangers_directory(tmp_path: Path, sample_dir: Path) -> None:
    (tmp_path / "file").write_text("x")
    one_line_error(ctrlbatch(str(sample_dir), "--engine", "local", "--out", str(tmp_path / "file" / "out")),
                   "file is not a directory")
    stranger = tmp_path / "theirs"
    (stranger / "figures").mkdir(parents=True)
    (stranger / "summary.json").write_text('{"theirs": 1}')
    (stranger / "figures" / "a.png").write_bytes(b"png")
    one_line_error(ctrlbatch(str(sample_dir), "--engine", "local", "--out", str(stranger)),
                   f"{MARKER} missing")
    assert (stranger / "summary.json").read_text() == '{"theirs": 1}'
    assert (stranger / "figures" / "a.png").read_bytes() == b"png"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "theirs"]


def test_out_replaces_its_own_output_and_nothing_else(tmp_path: Path, sample_dir: Path) -> None:
    out = tmp_path / "out"
    for _ in range(2):
        proc = ctrlbatch(str(sample_dir), "--engine", "local", "--quiet", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {MARKER, "requests", "summary.json", "report.png"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _slow_jsonl(directory: Path, sample_dir: Path, noops: int) -> Path:
    """The real sample as JSON lines, then a long run of NoOp lines: a replay that takes seconds."""
    path = directory / "slow.jsonl"
    history = open_history(sample_dir)
    with path.open("w") as f:
        write_jsonl(history.batches(), f)
    last = int(path.read_text().splitlines()[-1].split(",", 1)[0].split(":")[1])
    with path.open("a") as f:
        for o in range(last + 1, last + 1 + noops):
            f.write(f'{{"offset":{o},"type":"NO_OP_RECORD","version":0,"data":{{}},"batch":{last + 1}}}\n')
    return path


def _as_a_foreground_job() -> None:
    """In the child before exec: SIGINT and SIGTERM as a shell's foreground job has them (default
    dispositions, unblocked), whatever the test process inherited or set: a child inherits an
    ignored or blocked signal across exec (in a full run one came out ignored, and the replay
    then finished with 0)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _interrupt_when_tmp_appears(args: list[str], workdir: Path, signum: int, inner: str = "",
                                env: dict[str, str] | None = None) -> tuple[int, str]:
    """Start the command, wait for its DIR.tmp-* (and inner path in it), send signum, wait."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctrlbatch.cli", "replay", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV if env is None else env,
        stdin=subprocess.DEVNULL,
        preexec_fn=_as_a_foreground_job,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            if any((t / inner).exists() for t in workdir.glob("out.tmp-*")):
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.stderr.read() if proc.stderr else ''}"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                        (signal.SIGINT, 130, "interrupted")])
def test_a_signal_mid_run_leaves_no_temporary_directory(tmp_path: Path, sample_dir: Path, signum: int, code: int, line: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    data = _slow_jsonl(tmp_path, sample_dir, 300_000)
    rc, err = _interrupt_when_tmp_appears([str(data), "--engine", "local", "--quiet", "--out", str(work / "out")], work, signum)
    assert rc == code, err
    assert err.splitlines() == [f"ctrlbatch replay: {line}"], err[-2000:]
    assert list(work.iterdir()) == [], "no DIR.tmp-*, no DIR"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.jsonl", "work"]


def _private_tmp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A temporary directory of the child's own (TMPDIR) and the environment naming it, so that
    another ctrlbatch running on the machine meanwhile cannot add a ctrlbatch-spark-* here."""
    private = tmp_path_factory.mktemp("tmpdir")
    return private, {**ENV, "TMPDIR": str(private)}


def _spark_dirs(where: Path) -> set[str]:
    return {p.name for p in where.glob("ctrlbatch-spark-*")}


def test_spark_a_corrupt_input_is_the_local_engines_one_line_and_quiet_is_quiet(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> None:
    from ctrlbatch.replay.log.segments import scan_batches

    segment = tmp_path / "00000000000000000000.log"
    raw = bytearray((sample_dir / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes())
    victim = list(scan_batches(sample_dir / "__cluster_metadata-0" / "00000000000000000000.log"))[3]
    raw[victim.position + victim.length - 1] ^= 0x55
    segment.write_bytes(bytes(raw))
    private, env = _private_tmp(tmp_path_factory)
    local = one_line_error(ctrlbatch(str(segment), "--engine", "local", "--quiet"))
    spark = one_line_error(ctrlbatch(str(segment), "--quiet", "--out", str(tmp_path / "out"), env=env))
    assert spark == local and f"byte offset {victim.position}: CRC-32C mismatch" in spark
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.log"]
    assert _spark_dirs(private) == set(), "the private log4j directory is removed at exit"


def test_spark_sigterm_while_writing_leaves_no_temporary_directory(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    private, env = _private_tmp(tmp_path_factory)
    rc, err = _interrupt_when_tmp_appears([str(sample_dir), "--quiet", "--out", str(work / "out")], work,
                                          signal.SIGTERM, inner="requests", env=env)
    assert rc == 143, err
    assert err.splitlines() == ["ctrlbatch replay: terminated (SIGTERM)"], err[-3000:]
    time.sleep(1.0)  # an executor still writing would recreate DIR.tmp-*/requests now
    assert list(work.iterdir()) == []
    assert _spark_dirs(private) == set()


def test_no_module_reads_an_error_out_of_exception_text() -> None:
    """Errors cross from Spark's tasks as typed values (UnitEnd, WriteEnd): the regex over Spark's
    text that used to find an executor's error is gone, and stays gone."""
    import ctrlbatch.replay as replay

    root = Path(replay.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if "spark_error_line" in p.read_text(encoding="utf-8") or "_RELAYED" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_an_os_error_is_one_line_with_its_path() -> None:
    from ctrlbatch.common import os_error_line

    assert os_error_line(PermissionError(13, "Permission denied", "/data/x.log")) == "/data/x.log: Permission denied"
    assert os_error_line(OSError(18, "Invalid cross-device link", "/a", None, "/b")) == "/a -> /b: Invalid cross-device link"
    pyarrow_like = OSError("Failed to open local file '/out/part-0.parquet'.\n Detail: [errno 28] No space left on device")
    assert os_error_line(pyarrow_like) == (
        "Failed to open local file '/out/part-0.parquet'. Detail: [errno 28] No space left on device"
    )


def test_an_error_raised_while_unwinding_a_signal_gives_the_signal_back() -> None:
    from ctrlbatch.replay.run.cli import Terminated
    from ctrlbatch.replay.run.job import _interrupt_behind

    def unwinding() -> None:
        try:
            raise Terminated
        finally:
            raise KeyError("c")  # what Py4J raised from a finally on the interrupted gateway

    with pytest.raises(KeyError) as e:
        unwinding()
    assert isinstance(_interrupt_behind(e.value), Terminated)
    assert _interrupt_behind(KeyError("c")) is None
