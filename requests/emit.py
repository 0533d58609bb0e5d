"""A tiny source builder shared by the code generators.

Rules: generators write Python source as lines; constants they need (Struct objects,
classes, defaults) go into a namespace under generated names, so the emitted code only
does local and global lookups.
"""

from __future__ import annotations

import itertools
import linecache
from typing import Any


class Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.namespace: dict[str, Any] = {}
        self._ids = itertools.count()
        self._by_value: dict[tuple[str, str, Any], str] = {}

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def indent(self) -> _Indent:
        return _Indent(self)

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
        """Execute the source in a fresh namespace, registering it with linecache so that
        tracebacks show the generated lines."""
        src = self.text()
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        ns: dict[str, Any] = dict(self.namespace)
        if namespace:
            ns.update(namespace)
        exec(compile(src, filename, "exec"), ns)
        return ns


class _Indent:
    def __init__(self, src: Source) -> None:
        self.src = src

    def __enter__(self) -> None:
        self.src.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.src.depth -= 1
