"""Which request version the controller sends for each metadata version (IBP).

Rules: tables of (lowest IBP, version), newest first, as in ControllerChannelManager.scala
(LeaderAndIsr CCM:517-525, UpdateMetadata CCM:581-590, StopReplica CCM:650-655); the first
row the IBP is at least wins (looked up once per metadata version). Plus the IBP gates that
change a request's content.
"""

from __future__ import annotations

import functools

from ctrlbatch.context import MetadataVersion as MV

LEADER_AND_ISR_VERSIONS: tuple[tuple[MV, int], ...] = (
    (MV.IBP_3_4_IV0, 7),
    (MV.IBP_3_2_IV0, 6),
    (MV.IBP_2_8_IV1, 5),
    (MV.IBP_2_4_IV1, 4),
    (MV.IBP_2_4_IV0, 3),
    (MV.IBP_2_2_IV0, 2),
    (MV.IBP_1_0_IV0, 1),
)
UPDATE_METADATA_VERSIONS: tuple[tuple[MV, int], ...] = (
    (MV.IBP_3_4_IV0, 8),
    (MV.IBP_2_8_IV1, 7),
    (MV.IBP_2_4_IV1, 6),
    (MV.IBP_2_2_IV0, 5),
    (MV.IBP_1_0_IV0, 4),
    (MV.IBP_0_10_2_IV0, 3),
    (MV.IBP_0_10_0_IV1, 2),
    (MV.IBP_0_9_0, 1),
)
STOP_REPLICA_VERSIONS: tuple[tuple[MV, int], ...] = (
    (MV.IBP_3_4_IV0, 4),
    (MV.IBP_2_6_IV0, 3),
    (MV.IBP_2_4_IV1, 2),
    (MV.IBP_2_2_IV0, 1),
)

# LeaderAndIsr carries leaderRecoveryState only from this IBP (CCM:439-441).
LEADER_RECOVERY_STATE_SINCE = MV.IBP_3_2_IV0


def _pick(table: tuple[tuple[MV, int], ...], mv: MV) -> int:
    for since, version in table:
        if mv.is_at_least(since):
            return version
    return 0


@functools.cache
def leader_and_isr_version(mv: MV) -> int:
    return _pick(LEADER_AND_ISR_VERSIONS, mv)


@functools.cache
def update_metadata_version(mv: MV) -> int:
    return _pick(UPDATE_METADATA_VERSIONS, mv)


@functools.cache
def stop_replica_version(mv: MV) -> int:
    return _pick(STOP_REPLICA_VERSIONS, mv)
