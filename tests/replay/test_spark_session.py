"""The replay's SparkSession: the settings that keep Spark quiet, local and in UTC, workers that import ctrlbatch, and a log4j file private to each run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctrlbatch.replay.spark.session import spark_session


def test_session_settings(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.driver.host") == "127.0.0.1"


def test_workers_import_ctrlbatch(spark: Any) -> None:
    def probe(_: int) -> str:
        import ctrlbatch.replay

        return ctrlbatch.replay.__name__

    assert set(spark.sparkContext.parallelize(range(4), 2).map(probe).collect()) == {"ctrlbatch.replay"}


def test_getorcreate_returns_the_running_session(spark: Any) -> None:
    assert spark_session("local[2]") is spark


@pytest.mark.parametrize("bad", ["", "   "])
def test_bad_master_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="master must be"):
        spark_session(bad)


def _log4j_path_of_a_process() -> tuple[Path, str]:
    """quiet_log4j_file() in a fresh process: the path it gave and what the file held then."""
    import subprocess
    import sys

    code = (
        "from ctrlbatch.replay.spark.session import quiet_log4j_file as q\n"
        "p = q(); import os, stat\n"
        "assert q() == p\n"
        "print(p); print(oct(stat.S_IMODE(os.stat(p.parent).st_mode)), p.read_text().count('rootLogger.level = error'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    path, facts = out.splitlines()
    return Path(path), facts


def test_the_log4j_file_is_private_to_its_run_and_removed_at_exit(tmp_path: Path) -> None:
    import os
    import tempfile

    # A file planted at the fixed name earlier versions used is neither followed nor rewritten.
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    planted = Path(tempfile.gettempdir()) / f"ctrlbatch-log4j2-{os.getuid()}.properties"
    if not planted.exists() and not planted.is_symlink():
        planted.symlink_to(victim)
    try:
        first, facts = _log4j_path_of_a_process()
        second, _ = _log4j_path_of_a_process()
    finally:
        if planted.is_symlink() and planted.resolve() == victim:
            planted.unlink()
    assert facts == "0o700 1", "a directory only its owner can enter, holding the errors-only configuration"
    assert first.parent != second.parent and first.parent.name.startswith("ctrlbatch-spark-")
    assert not first.exists() and not first.parent.exists(), "removed when its process exits"
    assert victim.read_text() == "untouched"


def test_py4j_tracebacks_on_the_root_logger_are_dropped_and_nothing_else(tmp_path: Path) -> None:
    """py4j's logging.exception copy of an error it also raises never reaches the user."""
    import subprocess
    import sys

    script = tmp_path / "log.py"
    script.write_text(
        "import logging, sys\n"
        "from ctrlbatch.replay.spark.session import _drop_py4j_tracebacks\n"
        "_drop_py4j_tracebacks(); _drop_py4j_tracebacks()  # idempotent\n"
        "assert len(logging.getLogger().filters) == 1\n"
        "fake = compile('import logging\\nlogging.exception(\"Exception while sending command.\")',\n"
        "               '/x/site-packages/py4j/java_gateway.py', 'exec')\n"
        "try:\n    raise ConnectionResetError(104, 'reset')\n"
        "except OSError:\n    exec(fake, {})\n"
        "logging.error('ours stays visible')\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["ERROR:root:ours stays visible"]


def test_driver_java_options_put_the_callers_first_then_log4j_and_utc() -> None:
    from ctrlbatch.replay.spark.session import REPLAY_JAVA_OPTIONS, driver_java_options, quiet_log4j_file

    options = driver_java_options(REPLAY_JAVA_OPTIONS).split()
    assert options == [*REPLAY_JAVA_OPTIONS, f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}", "-Duser.timezone=UTC"]
    assert "-XX:TieredStopAtLevel=1" in options and "-XX:+UseSerialGC" in options
    assert driver_java_options().split() == options[len(REPLAY_JAVA_OPTIONS):]


@pytest.mark.parametrize("bad", [["-Xmx1g"], ("Xmx1g",), ("-Xmx1g", 3), "-Xmx1g"])
def test_bad_java_options_are_named(bad: Any) -> None:
    from ctrlbatch.replay.spark.session import driver_java_options

    with pytest.raises(ValueError, match="java_options: expected a tuple of JVM options"):
        driver_java_options(bad)
    with pytest.raises(ValueError, match="java_options: expected a tuple of JVM options"):
        spark_session("local[2]", java_options=bad)


def test_the_replay_starts_its_driver_jvm_with_the_replay_java_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The replay job asks for REPLAY_JAVA_OPTIONS (the session itself is the tests' shared one)."""
    from ctrlbatch.common import CommandError
    from ctrlbatch.replay.run import job
    from ctrlbatch.replay.spark import session
    from ctrlbatch.replay.spark.master import MasterError

    seen: dict[str, Any] = {}

    def fake(master: str | None, **kwargs: Any) -> Any:
        seen.update(kwargs, master=master)
        raise MasterError("stop here")

    monkeypatch.setattr(session, "spark_session", fake)
    with pytest.raises(CommandError, match="--master: stop here"):
        job._run_spark(job.ReplayJob(path=str(tmp_path), master="local[2]"), None, None, {})  # type: ignore[arg-type]
    assert seen["java_options"] == session.REPLAY_JAVA_OPTIONS and seen["master"] == "local[2]"
