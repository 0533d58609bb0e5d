"""A tiny source builder shared by the code generators, and the one way generated code is run.

Rules: generators write Python source as lines; constants they need (Struct objects,
classes, defaults) go into a namespace under generated names, so the emitted code only
does local and global lookups. Indentation is owned by blocks: `with src.block("if x:"):`
writes the header and indents what is written inside it, and `null_conditional` (Kafka's
IsNullConditional) writes both branches of a null test, so no generator moves the depth by
hand. A generator may attach a note to the lines it writes (`with src.noting(x):`); `note_at`
gives back the note of a line, which is how a failure is explained from the line it happened
on. Every exec'd source goes through `compile_source`: it gets a unique filename registered
with linecache (as attrs does), so a traceback through generated code shows the generated line.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_INDENT = "    "
_suffixes = itertools.count(2)  # for a filename already taken: "<name-2>", "<name-3>", ...


def compile_source(text: str, filename: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Execute text in namespace (updated in place and returned) under a unique filename based
    on `filename` ("<...>" by convention), registered with linecache so that tracebacks and
    inspect.getsource show the generated lines. Safe to call from several threads."""
    lines = text.splitlines(True)
    name = filename
    while True:
        entry = (len(text), None, lines, name)  # mtime None: linecache.checkcache keeps it
        if linecache.cache.setdefault(name, entry) is entry:  # one atomic step: no two sources share a name
            break
        name = f"{filename[:-1]}-{next(_suffixes)}>" if filename.endswith(">") else f"{filename}-{next(_suffixes)}"
    exec(compile(text, name, "exec"), namespace)
    return namespace


class Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.namespace: dict[str, Any] = {}
        self.notes: list[Any] = []  # notes[i]: the note in force when line i + 1 was written
        self._note: Any = None
        self._ids = itertools.count()
        self._by_value: dict[tuple[str, str, Any], str] = {}

    def __call__(self, line: str) -> None:
        self.lines.append(_INDENT * self.depth + line)
        self.notes.append(self._note)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """Write header (an `if`/`else`/`for`/`def`... line) and indent what is written inside;
        a note set inside ends with the block."""
        self(header)
        self.depth += 1
        saved = self._note
        try:
            yield
        finally:
            self.depth -= 1
            self._note = saved

    @contextmanager
    def null_conditional(self, is_null: str, if_null: str) -> Iterator[None]:
        """Kafka's IsNullConditional: `if <is_null>: <if_null>` then an `else:` block holding what
        is written inside the `with` (the not-null branch)."""
        with self.block(f"if {is_null}:"):
            self(if_null)
        with self.block("else:"):
            yield

    @contextmanager
    def noting(self, note: Any) -> Iterator[None]:
        """Attach note to every line written inside (the innermost note wins)."""
        saved, self._note = self._note, note
        try:
            yield
        finally:
            self._note = saved

    def set_note(self, note: Any) -> None:
        """Attach note to the lines written from now on (until the enclosing `noting` ends)."""
        self._note = note

    def note_at(self, lineno: int) -> Any:
        """The note of line lineno (1-based, as in a traceback), None if it has none."""
        return self.notes[lineno - 1] if 0 < lineno <= len(self.notes) else None

    def const(self, value: Any, prefix: str = "_k") -> str:
        """A global name bound to value; equal hashable values share one name."""
        key: tuple[str, str, Any] | None = (prefix, type(value).__name__, value)
        try:
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in self._by_value:
            return self._by_value[key]
        name = f"{prefix}{next(self._ids)}"
        self.namespace[name] = value
        if key is not None:
            self._by_value[key] = name
        return name

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def compile(self, filename: str, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
        """Execute the source (see compile_source) in a fresh namespace: this builder's
        constants, then `namespace`."""
        ns: dict[str, Any] = dict(self.namespace)
        if namespace:
            ns.update(namespace)
        return compile_source(self.text(), filename, ns)
