"""Every ```python example in README.md runs as written.

Rules: each block runs on its own, in a fresh namespace, from the repository's root (where a
reader runs them, so ``../shared/...`` paths resolve), so an example that relies on a name it
never defines fails here. Examples write only to temporary directories.
A block's own asserts are its checks; this test adds that it ran to the end.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


# Sections whose examples another test runs (it needs a fixture, such as the shared Spark session).
OWNED_SECTIONS = {"## The metadata log and the requests as Spark tables": "tests/replay/test_tables_readme.py"}


def _owned_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for heading in OWNED_SECTIONS:
        start = text.index(heading)
        end = text.find("\n## ", start + len(heading))
        spans.append((start, len(text) if end < 0 else end))
    return spans


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text(encoding="utf-8")
    owned = _owned_spans(text)
    return [
        (text.count("\n", 0, m.start()) + 2, m.group(1))
        for m in _BLOCK.finditer(text)
        if not any(a <= m.start() < b for a, b in owned)
    ]


def test_readme_has_examples() -> None:
    assert len(_blocks()) >= 2


@pytest.mark.parametrize(("line", "source"), _blocks(), ids=[f"README.md:{n}" for n, _ in _blocks()])
def test_readme_example_runs(line: int, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(README.parent)
    code = compile("\n" * (line - 1) + source, str(README), "exec")
    exec(code, {"__name__": "readme_example"})
