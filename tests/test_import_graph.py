"""The layers' import graph: the domain never imports the command line.

``ctrlbatch.cli`` only turns errors into exit codes and dispatches subcommands; what every layer
shares (CommandError, Progress) lives in ``ctrlbatch.common``, which imports no other ctrlbatch
package. The check reads the source with ``ast`` (every import statement, at any depth, including
imports inside functions), so a lazy import cannot hide an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = ("replay", "sim", "controller", "batch", "transport", "context", "requests", "testing")


def imported_modules(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports, as absolute dotted names (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base)
                module = f"{prefix}.{node.module}" if node.module else prefix
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def layer_files(folder: str) -> list[Path]:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, f"no Python files under {folder}/"
    return files


def test_the_checker_sees_absolute_relative_and_nested_imports(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("import ctrlbatch.cli\nfrom ..cli import main\ndef f():\n    from ctrlbatch.cli import x\n")
    found = imported_modules(src, "ctrlbatch.replay")
    assert {"ctrlbatch.cli", "ctrlbatch.cli.main", "ctrlbatch.cli.x"} <= found


@pytest.mark.parametrize("folder", DOMAIN)
def test_no_domain_module_imports_the_command_line(folder: str) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in layer_files(folder)
        for name in sorted(imported_modules(path, f"ctrlbatch.{folder}"))
        if name == "ctrlbatch.cli" or name.startswith("ctrlbatch.cli.")
    ]
    assert offenders == []


def test_common_imports_no_other_ctrlbatch_package() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in layer_files("common")
        for name in sorted(imported_modules(path, "ctrlbatch.common"))
        if name.startswith("ctrlbatch.") and not name.startswith("ctrlbatch.common")
    ]
    assert offenders == []


def test_controller_logic_stays_sans_io() -> None:
    """ctrlbatch.controller decides; it reaches the brokers only through the batch. It imports no
    network, simulation or replay layer, so a user embeds it with nothing but the batch engine."""
    below = ("ctrlbatch.sim", "ctrlbatch.transport", "ctrlbatch.replay", "asyncio", "socket")
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in layer_files("controller")
        for name in sorted(imported_modules(path, "ctrlbatch.controller"))
        if any(name == b or name.startswith(b + ".") for b in below)
    ]
    assert offenders == []
