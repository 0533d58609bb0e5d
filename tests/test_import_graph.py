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


# ctrlbatch.replay's stages, in pipeline order: a stage imports only itself and earlier stages
# (and other ctrlbatch packages), never a later one. replay/__init__.py is the public facade and
# only names its exports lazily. The table is the layout: every module lives in one of these.
REPLAY_STAGES: tuple[tuple[str, str], ...] = (
    ("schema", "the record catalog, generated record classes, the codec, JSON conversion"),
    ("log", "reading a history (segments, snapshots, JSON lines, dump text) into batches"),
    ("image", "the metadata image, deltas, the record-semantics table, net effects"),
    ("propagate", "the MigrationPropagator port: deltas to sends"),
    ("rows", "sends to request rows and frames; the summary"),
    ("output", "the output directory, written atomically; the report"),
    ("engine", "the replay skeleton and the one-process engine"),
    ("spark", "the Spark engine: session, source, plan, unit and write tasks"),
    ("run", "one run from options to output; the replay command"),
    ("tables", "the kraft_metadata data source and the requests DataFrame"),
    ("generate", "synthetic logs: the generator, its writer, generate-log"),
)
STAGE_RANK = {name: rank for rank, (name, _) in enumerate(REPLAY_STAGES)}


def replay_stage(path: Path) -> str | None:
    """The stage a replay module belongs to (None for the facade, replay/__init__.py)."""
    parts = path.relative_to(ROOT / "replay").parts
    return None if parts == ("__init__.py",) else parts[0]


def package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("").parts
    return "ctrlbatch." + ".".join(rel[:-1] if rel[-1] != "__init__" else rel[:-1])


def test_every_replay_module_lives_in_a_stage_of_the_table() -> None:
    stray = [str(p.relative_to(ROOT)) for p in layer_files("replay") if replay_stage(p) not in STAGE_RANK
             and replay_stage(p) is not None]
    assert stray == []
    on_disk = {p.name for p in (ROOT / "replay").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert on_disk == set(STAGE_RANK)


def test_the_stage_table_is_the_installed_package_list() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for stage in STAGE_RANK:
        assert f'"ctrlbatch.replay.{stage}",' in text, stage


def test_the_checker_sees_a_later_stage(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("from ..spark import plan\n")
    assert "ctrlbatch.replay.spark.plan" in imported_modules(src, "ctrlbatch.replay.image")


@pytest.mark.parametrize("stage", list(STAGE_RANK))
def test_no_replay_stage_imports_a_later_one(stage: str) -> None:
    offenders = []
    for path in sorted((ROOT / "replay" / stage).rglob("*.py")):
        for name in sorted(imported_modules(path, package_of(path))):
            parts = name.split(".")
            if parts[:2] != ["ctrlbatch", "replay"]:
                continue
            if len(parts) == 2:
                offenders.append(f"{path.relative_to(ROOT)} imports the facade ctrlbatch.replay")
            elif parts[2] in STAGE_RANK and STAGE_RANK[parts[2]] > STAGE_RANK[stage]:
                offenders.append(f"{path.relative_to(ROOT)} ({stage}) imports {name} (a later stage)")
    assert offenders == []


def private_imports(path: Path, package: str) -> list[str]:
    """``from M import _name`` where M is another ctrlbatch module (a private name crossing modules)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("ctrlbatch"):
                found += [f"{module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_the_checker_sees_a_private_import(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from .image import _Delta\n")
    assert private_imports(src, "ctrlbatch.replay.image") == ["ctrlbatch.replay.image.image._Delta"]


def test_no_private_name_crosses_a_replay_module() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in layer_files("replay")
        for name in private_imports(path, package_of(path))
    ]
    assert offenders == []
