"""An application class-data-sharing archive (AppCDS, JDK 13+) for the driver JVM that this
process starts, kept in a private per-user cache: the classes Spark loads at start-up are then
mapped pre-parsed and pre-verified instead of read from ~280 jars, parsed and verified each run.

Rules of this module:
- The settings are one table, ``CLASS_ARCHIVE`` (a ``ClassArchive``): where the cache lives,
  the options that use or write an archive, how long the first run waits for the JVM to write it.
  ``CTRLBATCH_SPARK_CLASS_ARCHIVE=off`` (or 0, no, false) turns it off.
- One archive per installation: its name is keyed (sha-256) by the java binary and libjvm.so
  (path, size, mtime), PySpark's version and jars (directory; names, sizes, mtimes) and the JVM options
  (``java_options`` and the driver's memory), so a changed install or option never maps a stale
  one; the JVM checks the rest itself (its build, the class path and each jar's size and mtime).
- The cache is ``$XDG_CACHE_HOME/ctrlbatch/spark-classes`` (``~/.cache`` without it), made 0700;
  the JVM trusts what it maps (classes arrive pre-verified), so a directory that is not ours, is
  a symlink or is writable by others, or an archive that is not our own regular file, turns the
  feature off; never a fixed name in the shared temporary directory.
- JDK 17 cannot write and use an archive in one run (-XX:+AutoCreateSharedArchive is JDK 19):
  a run without a usable archive writes one at its JVM's exit (-XX:ArchiveClassesAtExit) under a
  unique name; at this process's exit the JVM's stdin is closed (as Python's exit does anyway: the
  gateway then calls System.exit), the dump awaited (``dump_wait_s``) and the file renamed into
  place only if the JVM exited with 0. Concurrent runs each write their own file; the last rename
  wins and a reader never sees a partial file. Files left by a killed run are removed after a day;
  each use touches its archive, and one unused for 30 days (an old install's) is removed.
- Nothing about it reaches the user: -Xshare:auto (an unusable archive is skipped, never fatal) and
  the JVM's cds/class+path logging off (its warnings would go to the JVM's stdout, which is ours).
  A run whose JVM did not map the archive (/proc/PID/maps: a corrupt or foreign file) deletes it,
  so the next run writes a new one. An archive is named by its size too (KEY.SIZE.jsa): the JVM
  dies of SIGBUS mapping a truncated one (measured, JDK 17.0.15), so a file whose size is not its
  name's is deleted before any JVM sees it.
- Only for a local master (``spark_session``): the same driver JVM under a cluster master loads
  other classes, and a cluster's class path may hold directories, which CDS refuses. Any
  ``SPARK_CONF_DIR``, ``SPARK_CLASSPATH``, ``SPARK_DIST_CLASSPATH``, ``HADOOP_CONF_DIR``,
  ``YARN_CONF_DIR`` or an existing ``$SPARK_HOME/conf`` (class path directories) turns it off too.

Figures: session.py's rules (whole runs). Where the driver JVM's CPU went in one replay of the
100k-record generated log (per thread, /proc/PID/task, load 10-11), without -> with the archive:
py4j's request threads (context start, job calls) 2.52 -> 1.12 s, the main thread (SparkSubmit's
class loading) 1.18 -> 0.61, the C1 compiler threads 0.93 -> 0.87 (JIT work, which the archive does
not hold), the VM thread (serial GC) 0.18 -> 0.10, the executor threads 0.34 -> 0.18.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import attrs

__all__ = ["CLASS_ARCHIVE", "ArchivePlan", "ClassArchive", "archive_plan", "cache_directory"]

_OFF = ("0", "off", "no", "false")
_CLASS_PATH_ENV = ("SPARK_CONF_DIR", "SPARK_CLASSPATH", "SPARK_DIST_CLASSPATH", "HADOOP_CONF_DIR", "YARN_CONF_DIR")
_UNQUOTED = frozenset(" \t\n\"'\\")  # Spark's launcher splits extraJavaOptions on these


@attrs.frozen
class ClassArchive:
    """The table of settings (module rules)."""

    switch_env: str = "CTRLBATCH_SPARK_CLASS_ARCHIVE"
    subdirectory: str = "ctrlbatch/spark-classes"
    quiet: tuple[str, ...] = ("-Xshare:auto", "-Xlog:cds*=off", "-Xlog:class+path=off")
    use: str = "-XX:SharedArchiveFile={path}"
    dump: str = "-XX:ArchiveClassesAtExit={path}"
    dump_wait_s: float = 60.0
    stale_partial_s: float = 86_400.0
    unused_archive_s: float = 30 * 86_400.0


CLASS_ARCHIVE = ClassArchive()


@attrs.frozen
class ArchivePlan:
    """What one JVM start does: map ``path`` (``dumping`` False) or write ``partial`` at exit,
    renamed to ``path``'s stem and its size (KEY.SIZE.jsa)."""

    path: Path
    partial: Path | None
    options: tuple[str, ...]

    @property
    def dumping(self) -> bool:
        return self.partial is not None


def cache_directory(settings: ClassArchive = CLASS_ARCHIVE) -> Path | None:
    """The private archive directory (made 0700), or None where it is not safe or cannot be made."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    directory = base
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        for part in Path(settings.subdirectory).parts:  # ours made 0700 each, never a symlink
            directory = directory / part
            directory.mkdir(mode=0o700, exist_ok=True)
            if stat.S_ISLNK(os.lstat(directory).st_mode):  # mkdir(exist_ok) took a planted link for a directory
                return None
        st = os.lstat(directory)
    except (OSError, RuntimeError):
        return None
    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
    return directory if private and not _UNQUOTED & set(str(directory)) else None


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found else None


def _stamp(path: Path) -> str:
    with contextlib.suppress(OSError):
        st = os.stat(path)
        return f"{path}:{st.st_size}:{st.st_mtime_ns}"
    return f"{path}:-"


def archive_key(java_options: tuple[str, ...], driver_memory: str) -> str | None:
    """sha-256 over what makes an archive valid for this JVM start (module rules), or None."""
    java = _java()
    if java is None:
        return None
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    try:
        listing = sorted(f"{e.name}:{e.stat().st_size}:{e.stat().st_mtime_ns}" for e in os.scandir(jars))
    except OSError:
        return None
    digest = hashlib.sha256()
    for part in (_stamp(java), _stamp(java.parent.parent / "lib" / "server" / "libjvm.so"), pyspark.__version__,
                 str(jars), *listing, *java_options, driver_memory):  # the JVM checks the class path's own paths
        digest.update(part.encode() + b"\0")
    return f"spark-{pyspark.__version__}-{digest.hexdigest()[:24]}"


def _class_path_has_directories() -> bool:
    if any(os.environ.get(name) for name in _CLASS_PATH_ENV):
        return True
    import pyspark

    home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return os.path.exists(os.path.join(home, "conf"))


def _ours(path: Path) -> bool:
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_size > 0


def _remove_stale(directory: Path, now: float, settings: ClassArchive) -> None:
    """Partial files of killed runs after a day; archives no run used for 30 days (an old install's)."""
    for pattern, age_s in (("*.partial-*", settings.stale_partial_s), ("*.jsa", settings.unused_archive_s)):
        for entry in directory.glob(pattern):
            with contextlib.suppress(OSError):
                if now - os.lstat(entry).st_mtime > age_s:
                    entry.unlink()


def archive_plan(java_options: tuple[str, ...], driver_memory: str, settings: ClassArchive = CLASS_ARCHIVE) -> ArchivePlan | None:
    """The archive options for a driver JVM about to start, or None (off, unsafe or unknown)."""
    if os.environ.get(settings.switch_env, "").strip().lower() in _OFF or _class_path_has_directories():
        return None
    directory = cache_directory(settings)
    key = archive_key(java_options, driver_memory) if directory is not None else None
    if directory is None or key is None:
        return None
    try:
        for path in directory.glob(f"{key}.*.jsa"):
            if _ours(path) and path.name == _final_name(key, os.lstat(path).st_size):
                with contextlib.suppress(OSError):
                    os.utime(path)  # its mtime says when it was last used (see _remove_stale)
                return ArchivePlan(path, None, (*settings.quiet, settings.use.format(path=path)))
            path.unlink()  # not ours, or not the size it was written with (the JVM dies of a short one)
    except OSError:
        return None
    _remove_stale(directory, time.time(), settings)
    partial = directory / f"{key}.partial-{os.getpid()}-{os.urandom(4).hex()}"
    return ArchivePlan(directory / f"{key}.jsa", partial, (*settings.quiet, settings.dump.format(path=partial)))


def _final_name(key: str, size: int) -> str:
    return f"{key}.{size}.jsa"


def jvm_maps(pid: int, path: Path) -> bool | None:
    """Whether process ``pid`` maps a file of ``path``'s name (None where /proc cannot tell). By
    name, not by path: /proc shows the real path, which differs from ours where the cache's path
    goes through a symlink (a home elsewhere), and a file another run replaced meanwhile shows as
    "(deleted)"; the name holds the key and the size, so no other file has it."""
    name = os.fsencode(path.name)
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            for line in maps:
                fields = line.rstrip(b"\n").split(maxsplit=5)
                if len(fields) == 6 and os.path.basename(fields[5].removesuffix(b" (deleted)")) == name:
                    return True
            return False
    except OSError:
        return None


def after_start(
    plan: ArchivePlan, jvm: subprocess.Popen[bytes] | None, stop: Callable[[], None], settings: ClassArchive = CLASS_ARCHIVE
) -> str:
    """Once the JVM runs: 'used'; 'rejected' (the archive was not mapped: deleted for the next run
    to replace); 'dumping' (``stop`` the session, then the JVM, at this process's exit, and
    rename the dump); 'unknown'."""
    if jvm is None:
        return "unknown"
    if plan.partial is not None:
        atexit.register(_finish_dump, jvm, stop, plan.partial, plan.path, settings.dump_wait_s)
        return "dumping"
    mapped = jvm_maps(jvm.pid, plan.path)
    if mapped is None:
        return "unknown"
    if not mapped:
        with contextlib.suppress(OSError):
            plan.path.unlink()
        return "rejected"
    return "used"


def _finish_dump(jvm: subprocess.Popen[bytes], stop: Callable[[], None], partial: Path, final: Path, wait_s: float) -> None:
    """At exit: stop the session (else its accumulator server reports the JVM's going away), let
    the JVM exit (stdin EOF), wait for its dump, rename it into place if whole."""
    try:
        if jvm.poll() is None:  # a JVM already gone has no session to stop (PySpark would warn)
            with contextlib.suppress(Exception):
                stop()
        if jvm.stdin is not None:
            with contextlib.suppress(OSError):
                jvm.stdin.close()
        jvm.wait(timeout=wait_s)
        if jvm.returncode == 0 and _ours(partial):
            key = final.name.removesuffix(".jsa")
            kept = final.with_name(_final_name(key, os.lstat(partial).st_size))
            os.replace(partial, kept)
            for other in final.parent.glob(f"{key}.*.jsa"):  # another first run's, of another size
                if other.name != kept.name:
                    with contextlib.suppress(OSError):
                        other.unlink()
            return
    except BaseException:  # noqa: BLE001 - a second ^C or a timeout while waiting: no dump kept, nothing printed
        pass
    with contextlib.suppress(OSError):
        partial.unlink()
