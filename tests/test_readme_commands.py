"""Every ```sh block of README.md runs as written: top to bottom, in one shell, from the
repository's root, as a reader types them after a fresh clone.

Rules: the blocks are joined into one bash script (``set -euo pipefail``), so a block may rely on
what an earlier one did (the venv activated once) and any failing command fails the test with the
README line it came from. ``make test`` is the one command left out: it is the command that runs
this test (CI runs it through .ci/run). ```text blocks hold templates (LOGDIR, a cluster's
master) and are not run. Commands write under /tmp/ctrlbatch-* or the git-ignored replay-out/.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
SKIPPED = {"make test"}


def readme_commands() -> list[tuple[int, str]]:
    """(README line, command) of every command line in the ```sh blocks, comments dropped."""
    text = README.read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        first = text.count("\n", 0, m.start()) + 2
        for i, line in enumerate(m.group(1).splitlines()):
            command = line.split("  #", 1)[0].rstrip()
            if command and not command.lstrip().startswith("#"):
                out.append((first + i, command))
    return out


def test_the_readme_has_commands_and_skips_only_the_test_command() -> None:
    commands = [c for _, c in readme_commands()]
    assert "make run" in commands and ". .venv/bin/activate" in commands
    assert [c for c in commands if c.split("#")[0].strip() in SKIPPED] == ["make test"]


def test_readme_commands_run_as_written(tmp_path: Path) -> None:
    # as on a fresh machine: what an earlier run left under /tmp/ctrlbatch-* goes first
    # (generate-log refuses a directory that already holds a log, as it should)
    # (generate-log refuses a directory that already holds a log, as it should); and replay-out/,
    # make run's git-ignored output, which an older ctrlbatch may have written with an older marker
    lines = ["set -euo pipefail",
             "rm -rf replay-out /tmp/ctrlbatch-out /tmp/ctrlbatch-synthetic /tmp/ctrlbatch-elr /tmp/ctrlbatch-dist /tmp/ctrlbatch-sizes"]
    for number, command in readme_commands():
        if command.strip() in SKIPPED:
            continue
        lines.append(f"echo '>>> README.md:{number}: {command.replace(chr(39), '')}' >&2")
        lines.append(command)
    script = tmp_path / "readme.sh"
    script.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc = subprocess.run(["bash", str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)
    ran = [line for line in proc.stderr.splitlines() if line.startswith(">>> README.md:")]
    assert proc.returncode == 0, f"failed at {ran[-1] if ran else 'the start'}:\n{proc.stderr[-3000:]}"
    assert len(ran) == len([c for _, c in readme_commands() if c.strip() not in SKIPPED])
