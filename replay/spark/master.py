"""Checks a Spark master URL before a JVM is started for it, so a wrong or unreachable master costs
one line and a few seconds, not a minute of retries and three Java stack traces.

Rules of this module:
- The accepted forms are a table (``MASTER_FORMS``), Spark's own list (SparkContext.createTaskScheduler
  and SparkSubmit): ``local``, ``local[N|*]``, ``local[N|*,F]``, ``local-cluster[N,C,M]``,
  ``spark://HOST:PORT[,HOST:PORT...]``, ``yarn``, ``k8s://URL``, ``mesos://URL``. Anything else is a
  ``MasterError`` naming the forms.
- ``spark://`` masters are probed with one TCP connection per listed address, each bounded by
  ``MASTER_CONNECT_TIMEOUT_S``; one that accepts is enough (standalone HA lists several). Without
  the probe, Spark's standalone client retries its registration 3 times 20 s apart and then
  leaves a stopped SparkContext behind (measured: 64 s and three 60-line Java traces).
- A port that accepts but is not a Spark master is left to Spark, which gives up after its own
  registration limit (3 x 20 s, fixed in StandaloneAppClient) and stops the context it made;
  ``session_start`` turns that, and a JVM that does not start at all, into one ``MasterError`` line.
- yarn, k8s and mesos masters are reached through their own clients and are not probed here.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from collections.abc import Iterator

__all__ = ["MASTER_CONNECT_TIMEOUT_S", "MASTER_FORMS", "MasterError", "check_master", "local_cores", "session_start"]

MASTER_CONNECT_TIMEOUT_S = 5.0

MASTER_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("local", re.compile(r"local")),
    ("local[N]", re.compile(r"local\[(\d+|\*)\]")),
    ("local[N,F]", re.compile(r"local\[(\d+|\*)\s*,\s*\d+\]")),
    ("local-cluster[N,C,M]", re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]")),
    ("spark://HOST:PORT", re.compile(r"spark://[^\s,/]+:\d+(,[^\s,/]+:\d+)*")),
    ("yarn", re.compile(r"yarn")),
    ("k8s://URL", re.compile(r"k8s://\S+")),
    ("mesos://URL", re.compile(r"mesos://\S+")),
)


_LOCAL_CORES = re.compile(r"local(?:\[(\d+|\*)(?:\s*,\s*\d+)?\])?")


def local_cores(url: str) -> int | None:
    """The cores a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master runs tasks on (its
    default parallelism, as Spark sets it: ``*`` is the machine's processors), before any JVM;
    None for another master."""
    m = _LOCAL_CORES.fullmatch(url.strip())
    if m is None:
        return None
    n = m.group(1)
    cores = 1 if n is None else (os.cpu_count() or 1) if n == "*" else int(n)
    return cores if cores >= 1 else None


class MasterError(ValueError):
    """A master URL that is malformed or cannot be reached; the message is one line."""


def _addresses(url: str) -> list[tuple[str, int]]:
    out = []
    for hostport in url[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


def check_master(url: str, timeout: float = MASTER_CONNECT_TIMEOUT_S) -> None:
    """Raise MasterError unless ``url`` is one of Spark's master forms and, for ``spark://``, one
    of its addresses accepts a TCP connection within ``timeout`` seconds."""
    text = url.strip()
    form = next((name for name, pattern in MASTER_FORMS if pattern.fullmatch(text)), None)
    if form is None:
        forms = ", ".join(name for name, _ in MASTER_FORMS)
        raise MasterError(f"{url!r} is not a Spark master URL (one of: {forms})")
    if form != "spark://HOST:PORT":
        return
    reasons = []
    for host, port in _addresses(text):
        if not 0 < port < 65536:
            raise MasterError(f"{url!r}: port {port} is out of range (1-65535)")
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as e:
            reason = "timed out" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)
            reasons.append(f"{host}:{port}: {reason}")
    raise MasterError(
        f"cannot reach the Spark master {text} within {timeout:g} s ({'; '.join(reasons)}); "
        "is it running, and reachable from this machine?"
    )


# What a failed start looks like from Python, and the line the user gets for it.
_START_FAILURES: tuple[tuple[str, str], ...] = (
    ("Cannot call methods on a stopped SparkContext",
     "the Spark application was stopped before it started: the master {master} did not register it "
     "(for spark://, Spark gives up after 3 x 20 s: is that address a Spark master?)"),
    ("JAVA_GATEWAY_EXITED", "Spark's JVM exited before it started (master {master}): check JAVA_HOME and the master URL"),
)


@contextlib.contextmanager
def session_start(master: str | None) -> Iterator[None]:
    """Around ``getOrCreate()``: a start that failed in one of ``_START_FAILURES``' ways becomes a
    one-line MasterError; anything else keeps its trace (a bug, or a failure we do not know)."""
    try:
        yield
    except Exception as e:
        text = str(e)
        line = next((msg for marker, msg in _START_FAILURES if marker in text), None)
        if line is None:
            raise
        raise MasterError(line.format(master=master or "(spark-submit's)")) from None
