"""Where Kafka's reference specs live: $CTRLBATCH_SHARED, else the shared/ folder beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def shared_dir() -> Path:
    env = os.environ.get("CTRLBATCH_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    path = shared_dir()
    # CI always has ../shared beside the checkout: missing specs are a broken set-up, not a skip.
    assert (path / "kafka" / "message").is_dir(), f"Kafka's reference specs are not at {path} (set CTRLBATCH_SHARED)"
    return path
