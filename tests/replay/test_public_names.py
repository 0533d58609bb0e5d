"""ctrlbatch.replay's public names are typed for a user's type checker: the names its lazy
__getattr__ serves are the ones a TYPE_CHECKING block imports, and mypy, run on a user's
snippet, sees their real types (never Any) and a record's data by its generated class."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ctrlbatch.replay as replay

ROOT = Path(__file__).resolve().parents[2]


def _type_checking_imports() -> dict[str, str]:
    """name -> module of every import under `if TYPE_CHECKING:` in replay/__init__.py."""
    tree = ast.parse(Path(replay.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    out: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is not None
        for alias in node.names:
            assert alias.asname is None
            out[alias.name] = node.module
    return out


def test_the_type_checking_block_names_every_export_from_its_module() -> None:
    assert _type_checking_imports() == replay._EXPORTS
    assert replay.__all__ == sorted(replay._EXPORTS)
    for name, module in replay._EXPORTS.items():
        assert getattr(replay, name) is getattr(__import__(f"ctrlbatch.replay.{module}", fromlist=[name]), name)


def test_private_propagator_helpers_are_not_exported() -> None:
    for name in ("touched_topics", "needs_full_image", "partial_image", "TouchedTopics", "propagate_changes"):
        assert name not in replay.__all__ and not hasattr(replay, name)


SNIPPET = """
import ctrlbatch.replay as replay
from ctrlbatch.replay import EMPTY_IMAGE, MetadataRecord, ReplayOptions, open_history
from ctrlbatch.replay.schema.metadata_classes import RegisterBrokerRecord, TopicRecord

{reveal_all}
reveal_type(open_history("x"))
reveal_type(EMPTY_IMAGE.brokers)
ReplayOptions(targets=3)


def user(r: MetadataRecord) -> None:
    reveal_type(r.data)
    if isinstance(r.data, TopicRecord):
        reveal_type(r.data.topic_id)
    reveal_type(RegisterBrokerRecord().end_points)
"""


# Names whose value comes from a library that ships no type information.
UNTYPED = {"REQUEST_SCHEMA": "a pyarrow Schema"}


def test_mypy_sees_the_real_types_of_a_users_imports(tmp_path: Path) -> None:
    names = replay.__all__
    reveal_all = "\n".join(f"reveal_type(replay.{n})" for n in names)
    text = SNIPPET.format(reveal_all=reveal_all)
    user = tmp_path / "user.py"
    user.write_text(text, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), str(user)],
        cwd=ROOT, capture_output=True, text=True,
    )
    notes = [line.split(": ", 2)[2] for line in out.stdout.splitlines() if ": note: Revealed type is" in line]
    # mypy versions differ in writing builtins.int or int: compare without the prefix
    revealed = [n.removeprefix('Revealed type is "').removesuffix('"').replace("builtins.", "") for n in notes]
    assert len(revealed) == len(names) + 5, out.stdout + out.stderr
    by_name = dict(zip(names, revealed[: len(names)], strict=True))
    assert [n for n, t in by_name.items() if t == "Any"] == list(UNTYPED)
    assert by_name["ReplayOptions"].endswith("-> ctrlbatch.replay.propagate.propagator.ReplayOptions")
    assert by_name["open_history"].endswith("-> ctrlbatch.replay.log.sources.History")
    assert revealed[len(names):] == [
        "ctrlbatch.replay.log.sources.History",
        "typing.Mapping[int, ctrlbatch.replay.image.image.BrokerRegistration]",
        "ctrlbatch.requests.model.Message",
        "uuid.UUID",
        "tuple[ctrlbatch.replay.schema.metadata_classes.RegisterBrokerRecord.BrokerEndpoint, ...]",
    ]
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'Argument "targets" to "ReplayOptions"' in errors[0], out.stdout
