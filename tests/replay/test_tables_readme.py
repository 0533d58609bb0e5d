"""README.md's section on the Spark tables (records table, stream, requests DataFrame): every
```python block of it runs as written, as tests/test_readme.py runs the others (from the
repository's root, each block in a fresh namespace), here on the tests' shared Spark session;
tests/test_readme.py leaves this section's blocks to this file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

HEADING = "## The metadata log and the requests as Spark tables"


def _section() -> str:
    """The README's section under HEADING, up to the next level-2 heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return text[start:] if end < 0 else text[start:end]


def _blocks() -> list[str]:
    return [m.group(1) for m in _BLOCK.finditer(_section())]


def test_the_section_has_the_three_entry_points() -> None:
    blocks = _blocks()
    assert len(blocks) == 4
    assert 'format("kraft_metadata")' in blocks[0] and "readStream" in blocks[1] and "replay_dataframe" in blocks[2]


@pytest.mark.parametrize("index", range(4))
def test_the_sections_examples_run(index: int, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(_blocks()[index], f"<README section block {index}>", "exec"), {"__name__": "readme_example"})
