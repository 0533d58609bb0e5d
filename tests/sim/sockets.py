"""Helpers the socket tests of the simulated servers share (bounded waits on a FrameClient)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ctrlbatch.sim.client import FrameClient


async def closed_by_server(c: FrameClient, timeout: float) -> bool:
    """True when the server closes c within timeout (EOF or a reset), False when it is still open."""
    try:
        return await asyncio.wait_for(c.reader.read(1), timeout) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def until(cond: Callable[[], bool]) -> None:
    while not cond():  # bounded by the caller's wait_for
        await asyncio.sleep(0.005)
