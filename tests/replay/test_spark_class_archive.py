"""The driver JVM's class-data-sharing archive (replay/spark/class_archive.py): written on a first
run, mapped on the next, a short, corrupt or unsafe one never used, and nothing ever printed."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.spark import class_archive as ca
from ctrlbatch.replay.spark.class_archive import (
    CLASS_ARCHIVE,
    archive_key,
    archive_plan,
    cache_directory,
    jvm_maps,
)

OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in (CLASS_ARCHIVE.switch_env, "SPARK_CONF_DIR", "SPARK_CLASSPATH", "SPARK_DIST_CLASSPATH",
                 "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "xdg" / CLASS_ARCHIVE.subdirectory


def test_the_cache_directory_is_made_private(cache: Path) -> None:
    assert cache_directory() == cache
    for directory in (cache, cache.parent):
        assert directory.stat().st_mode & 0o777 == 0o700


def test_a_cache_directory_others_can_write_or_a_symlink_turns_it_off(cache: Path, tmp_path: Path) -> None:
    cache.mkdir(parents=True)
    cache.chmod(0o777)
    assert cache_directory() is None and archive_plan(OPTIONS, "2g") is None
    cache.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.symlink_to(elsewhere)
    assert cache_directory() is None and archive_plan(OPTIONS, "2g") is None


@pytest.mark.parametrize("value", ["off", "0", "No", "false"])
def test_the_switch_turns_it_off(cache: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(CLASS_ARCHIVE.switch_env, value)
    assert archive_plan(OPTIONS, "2g") is None
    assert not cache.exists()


@pytest.mark.parametrize("name", ["SPARK_CONF_DIR", "HADOOP_CONF_DIR", "SPARK_DIST_CLASSPATH"])
def test_class_path_directories_turn_it_off(cache: Path, monkeypatch: pytest.MonkeyPatch, name: str, tmp_path: Path) -> None:
    monkeypatch.setenv(name, str(tmp_path))
    assert archive_plan(OPTIONS, "2g") is None


def test_no_archive_means_a_dump_under_a_unique_name_quietly(cache: Path) -> None:
    first, second = archive_plan(OPTIONS, "2g"), archive_plan(OPTIONS, "2g")
    assert first is not None and second is not None and first.dumping and second.dumping
    assert first.partial != second.partial and first.partial is not None and first.partial.parent == cache
    assert f"-XX:ArchiveClassesAtExit={first.partial}" in first.options
    assert {"-Xshare:auto", "-Xlog:cds*=off"} <= set(first.options)
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in first.options)


def test_an_archive_of_the_size_in_its_name_is_used_any_other_is_deleted(cache: Path) -> None:
    plan = archive_plan(OPTIONS, "2g")
    assert plan is not None
    key = plan.path.stem
    good = cache / f"{key}.5.jsa"
    good.write_bytes(b"12345")
    used = archive_plan(OPTIONS, "2g")
    assert used is not None and not used.dumping and used.path == good
    assert f"-XX:SharedArchiveFile={good}" in used.options and "-Xshare:auto" in used.options
    good.write_bytes(b"123")  # truncated: the JVM would die of SIGBUS mapping it
    again = archive_plan(OPTIONS, "2g")
    assert again is not None and again.dumping and not good.exists()


def test_a_symlink_in_place_of_the_archive_is_removed_not_followed(cache: Path, tmp_path: Path) -> None:
    plan = archive_plan(OPTIONS, "2g")
    assert plan is not None
    target = tmp_path / "planted"
    target.write_bytes(b"12345")
    link = cache / f"{plan.path.stem}.5.jsa"
    link.symlink_to(target)
    again = archive_plan(OPTIONS, "2g")
    assert again is not None and again.dumping
    assert not os.path.lexists(link) and target.read_bytes() == b"12345"


def test_partials_of_killed_runs_are_removed_after_a_day(cache: Path) -> None:
    cache.mkdir(parents=True, mode=0o700)
    old, fresh = cache / "k.partial-1-aa", cache / "k.partial-2-bb"
    for path in (old, fresh):
        path.write_bytes(b"x")
    day_ago = time.time() - CLASS_ARCHIVE.stale_partial_s - 60
    os.utime(old, (day_ago, day_ago))
    assert archive_plan(OPTIONS, "2g") is not None
    assert not old.exists() and fresh.exists()


def test_a_used_archive_is_touched_and_one_unused_for_30_days_is_removed(cache: Path) -> None:
    plan = archive_plan(OPTIONS, "2g")
    assert plan is not None
    ours = cache / f"{plan.path.stem}.5.jsa"
    ours.write_bytes(b"12345")
    month_ago = time.time() - CLASS_ARCHIVE.unused_archive_s - 60
    os.utime(ours, (month_ago, month_ago))
    assert archive_plan(OPTIONS, "2g") is not None
    assert time.time() - ours.stat().st_mtime < 60
    old_install, recent = cache / "spark-0.0.0-old.7.jsa", cache / "spark-0.0.0-recent.7.jsa"
    for path in (old_install, recent):
        path.write_bytes(b"1234567")
    os.utime(old_install, (month_ago, month_ago))
    assert archive_plan(OPTIONS, "1g") is not None  # another key: a dump, which clears what nobody used
    assert not old_install.exists() and recent.exists() and ours.exists()


@given(st.lists(st.sampled_from(["-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx1g"]), max_size=3),
       st.sampled_from(["1g", "2g"]))
def test_the_key_follows_the_options_and_memory(options: list[str], memory: str) -> None:
    key = archive_key(tuple(options), memory)
    assert key is not None and key == archive_key(tuple(options), memory)
    assert key != archive_key((*options, "-Xss2m"), memory)
    assert key != archive_key(tuple(options), memory + "0")


def test_the_key_follows_the_jars_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two installs (venvs) of one PySpark: two archives, not one that each JVM rejects in turn."""
    import pyspark

    key = archive_key(OPTIONS, "2g")
    other = tmp_path / "pyspark"
    (other / "jars").mkdir(parents=True)
    for jar in (Path(pyspark.__file__).parent / "jars").iterdir():  # the same names, sizes and mtimes
        (other / "jars" / jar.name).symlink_to(jar)
    monkeypatch.setattr(pyspark, "__file__", str(other / "__init__.py"))
    assert archive_key(OPTIONS, "2g") not in (None, key)


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)


def test_a_dump_is_renamed_into_place_only_when_the_jvm_exits_cleanly(tmp_path: Path) -> None:
    final = tmp_path / "key.jsa"
    partial = tmp_path / "key.partial-1-aa"
    writer = _child(f"import sys; sys.stdin.read(); open({str(partial)!r}, 'wb').write(b'x' * 10)")
    stopped: list[bool] = []
    ca._finish_dump(writer, lambda: stopped.append(True), partial, final, 30)
    assert stopped == [True] and (tmp_path / "key.10.jsa").read_bytes() == b"x" * 10 and not partial.exists()
    failing = _child(f"import sys; sys.stdin.read(); open({str(partial)!r}, 'wb').write(b'x'); sys.exit(3)")
    ca._finish_dump(failing, lambda: None, partial, tmp_path / "other.jsa", 30)
    assert not partial.exists() and not list(tmp_path.glob("other*"))


def test_jvm_maps_tells_a_mapped_file_from_one_that_is_not(tmp_path: Path) -> None:
    mapped, other = tmp_path / "mapped", tmp_path / "other"
    mapped.write_bytes(b"x" * 4096)
    other.write_bytes(b"x")
    with open(mapped, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ):
        assert jvm_maps(os.getpid(), mapped) is True
        assert jvm_maps(os.getpid(), other) is False



def test_jvm_maps_knows_the_archive_through_a_symlinked_cache_and_once_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    linked = tmp_path / "home-link"
    linked.symlink_to(real)  # /proc shows the real path; the cache's path goes through the link
    archive = linked / "key.4096.jsa"
    archive.write_bytes(b"x" * 4096)
    with open(archive, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ):
        assert jvm_maps(os.getpid(), archive) is True
        fresh = linked / "fresh"
        fresh.write_bytes(b"y" * 4096)
        os.replace(fresh, archive)  # another run's archive took its name: the mapping says "(deleted)"
        assert jvm_maps(os.getpid(), archive) is True
    assert jvm_maps(os.getpid(), archive) is False


def test_a_symlink_planted_inside_the_cache_path_turns_it_off(cache: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.parent.parent.mkdir(parents=True, exist_ok=True)
    cache.parent.symlink_to(elsewhere)  # the ctrlbatch/ component, above spark-classes/
    assert cache_directory() is None and archive_plan(OPTIONS, "2g") is None


def test_a_dump_kept_replaces_another_first_runs_archive_of_the_same_key(tmp_path: Path) -> None:
    final, partial = tmp_path / "key.jsa", tmp_path / "key.partial-2"
    (tmp_path / "key.3.jsa").write_bytes(b"old")
    writer = _child(f"import sys; sys.stdin.read(); open({str(partial)!r}, 'wb').write(b'x' * 10)")
    ca._finish_dump(writer, lambda: None, partial, final, 30)
    assert sorted(p.name for p in tmp_path.glob("key.*.jsa")) == ["key.10.jsa"]


def test_a_gone_jvm_is_not_stopped_again_and_its_partial_is_removed(tmp_path: Path) -> None:
    partial = tmp_path / "key.partial-3"
    partial.write_bytes(b"x")
    gone = _child("import sys; sys.exit(9)")
    gone.wait(timeout=30)
    stopped: list[bool] = []
    ca._finish_dump(gone, lambda: stopped.append(True), partial, tmp_path / "key.jsa", 30)
    assert stopped == [] and not partial.exists() and not list(tmp_path.glob("key.*.jsa"))

_RUN = """
import sys
from ctrlbatch.replay.spark.class_archive import CLASS_ARCHIVE
from ctrlbatch.replay.spark.session import REPLAY_JAVA_OPTIONS, class_archive_state, spark_session
s = spark_session("local[1]", quiet=True, java_options=REPLAY_JAVA_OPTIONS, class_archive=CLASS_ARCHIVE)
assert s.sparkContext.parallelize([1, 2, 3], 1).map(lambda x: x * 2).collect() == [2, 4, 6]
open(sys.argv[1], "w").write(class_archive_state())
"""


def _run(cache: Path, tmp_path: Path) -> tuple[str, list[Path]]:
    """One process starting a session with the archive: its state; stdout and stderr must stay empty."""
    state = tmp_path / "state"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", TZ="UTC")
    done = subprocess.run([sys.executable, "-c", _RUN, str(state)], capture_output=True, text=True, timeout=180, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    return state.read_text(), sorted(cache.iterdir())


def test_an_archive_is_written_then_used_and_a_bad_one_is_dropped_silently(cache: Path, tmp_path: Path) -> None:
    state, files = _run(cache, tmp_path)
    assert state == "dumping" and len(files) == 1
    archive = files[0]
    assert archive.name.endswith(f".{archive.stat().st_size}.jsa") and archive.stat().st_size > 1_000_000
    assert _run(cache, tmp_path) == ("used", [archive])
    archive.chmod(0o600)
    with open(archive, "r+b") as f:  # same size, so the name still matches: corrupt contents
        f.write(os.urandom(4096))
    assert _run(cache, tmp_path) == ("rejected", [])
    truncated = archive.with_name(archive.name)  # a short file under the name (SIGBUS if mapped)
    truncated.write_bytes(b"\0" * 1024)
    state, files = _run(cache, tmp_path)
    assert state == "dumping" and len(files) == 1 and files[0].stat().st_size > 1_000_000


def test_the_replay_asks_for_the_class_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typing import Any

    from ctrlbatch.common import CommandError
    from ctrlbatch.replay.run import job
    from ctrlbatch.replay.spark import session
    from ctrlbatch.replay.spark.master import MasterError

    seen: dict[str, Any] = {}

    def fake(master: str | None, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise MasterError("stop here")

    monkeypatch.setattr(session, "spark_session", fake)
    with pytest.raises(CommandError, match="--master: stop here"):
        job._run_spark(job.ReplayJob(path=str(tmp_path), master="local[2]"), None, None, {})  # type: ignore[arg-type]
    assert seen["class_archive"] is CLASS_ARCHIVE
