"""Process-wide tuning lives in one module: outside ctrlbatch.common.tuning, no package sets the
collector's thresholds, disables, freezes or unfreezes it, or calls the C allocator's mallopt or
malloc_trim. sim/ is listed with what it still keeps itself (its handler threads' pause and trim,
the same rules as tuning.shared_gc_pause and tuning.trim_heap), so a new copy anywhere fails."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("replay", "batch", "sim", "transport", "controller", "context", "requests", "cli", "common")
TUNING_CALLS = {"set_threshold", "freeze", "unfreeze", "disable", "enable", "mallopt", "malloc_trim"}
# Where such calls may still be, and why: the one module, and sim's own copy (another branch's).
ALLOWED = {"common/tuning.py", "sim/handler_threads.py"}


def tuning_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in TUNING_CALLS:
            owner = ast.unparse(node.value)
            if owner == "gc" or node.attr in {"mallopt", "malloc_trim"}:
                found.append(f"{owner}.{node.attr}")
    return found


def test_the_checker_sees_a_collector_call(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("import gc\ndef f(libc):\n    gc.set_threshold(1)\n    libc.malloc_trim(0)\n    x.enable()\n")
    assert tuning_calls(src) == ["gc.set_threshold", "libc.malloc_trim"]


def test_only_common_tuning_tunes_the_process() -> None:
    offenders = {
        str(p.relative_to(ROOT)): calls
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
        if (calls := tuning_calls(p)) and str(p.relative_to(ROOT)) not in ALLOWED
    }
    assert offenders == {}
    assert tuning_calls(ROOT / "common" / "tuning.py")  # the checker does see the module itself
