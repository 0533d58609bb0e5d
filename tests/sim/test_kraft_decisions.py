"""KraftDecisions: Kafka 3.9's PartitionChangeBuilderTest cases (ZooKeeper migration on, no ELR: the
record versions 0-1 parameters), the broker-event rules of ReplicationControlManager, and properties."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, PartitionRegistration, apply_delta
from ctrlbatch.replay.log.records import MetadataRecord
from ctrlbatch.replay.schema.metadata_classes import BrokerRegistrationChangeRecord, PartitionChangeRecord
from ctrlbatch.sim import kraft_decisions as kd

FOO_ID = uuid.UUID(int=1)
FOO = PartitionRegistration((2, 1, 3), (2, 1, 3), leader=1, leader_epoch=100, partition_epoch=200)
BAR = PartitionRegistration((1, 2, 3, 4), (1, 2, 3), removing_replicas=(1,), adding_replicas=(4,), leader=1,
                            leader_epoch=100, partition_epoch=200)
BAZ = PartitionRegistration((2, 1, 3), (1, 3), leader=3, leader_epoch=100, partition_epoch=200)
OFFLINE = PartitionRegistration((2, 1, 3), (3,), leader=-1, leader_epoch=100, partition_epoch=200)


def not3(r: int) -> bool:
    return r != 3


def change(p: PartitionRegistration, ok=not3, **kw: object) -> PartitionChangeRecord | None:  # type: ignore[no-untyped-def]
    return kd.partition_change(p, FOO_ID, 0, ok, **kw)  # type: ignore[arg-type]


def rec(**kw: object) -> PartitionChangeRecord:
    return PartitionChangeRecord(partition_id=0, topic_id=FOO_ID, **kw)  # type: ignore[arg-type]


def leader_of(p: PartitionRegistration, r: PartitionChangeRecord | None) -> int:
    return p.leader if r is None or r.leader == kd.NO_LEADER_CHANGE else r.leader


@pytest.mark.parametrize(("p", "ok", "kw", "leader"), [  # testElectLeader
    (FOO, not3, {"election": kd.PREFERRED}, 2),
    (FOO, not3, {}, 1),
    (FOO, not3, {"election": kd.UNCLEAN}, 1),
    (FOO, not3, {"target_isr": [1, 3]}, 1),
    (FOO, not3, {"election": kd.UNCLEAN, "target_isr": [1, 3]}, 1),
    (FOO, not3, {"target_isr": [3]}, kd.NO_LEADER),
    (FOO, not3, {"election": kd.UNCLEAN, "target_isr": [3]}, 2),
    (FOO, not3, {"election": kd.UNCLEAN, "target_isr": [4], "target_replicas": [2, 1, 3, 4]}, 4),
    (BAZ, lambda r: True, {"election": kd.PREFERRED}, 3),
    (BAZ, lambda r: True, {}, 3),
    (BAZ, lambda r: True, {"election": kd.UNCLEAN}, 3),
])
def test_elect_leader(p: PartitionRegistration, ok, kw, leader: int) -> None:  # type: ignore[no-untyped-def]
    assert leader_of(p, change(p, ok, **kw)) == leader


def test_no_change() -> None:
    assert change(FOO) is None
    assert change(FOO, election=kd.UNCLEAN) is None
    assert change(BAR) is None
    assert change(BAR, election=kd.UNCLEAN) is None
    assert change(BAZ, lambda r: True, election=kd.PREFERRED) is None


def test_leader_epoch_bump_on_isr_shrink_with_zk_migration() -> None:
    """testLeaderEpochBumpOnIsrShrinkWithZkMigration (and testIsrChangeDoesntBumpLeaderEpoch's
    shrink, which bumps once migration is on)."""
    assert change(FOO, target_isr=[2, 1]) == rec(isr=(2, 1), leader=1)


def test_no_leader_epoch_bump_on_isr_expansion_during_migration() -> None:
    p = PartitionRegistration((2, 1, 3), (2, 1), leader=1, leader_epoch=100, partition_epoch=200)
    assert change(p, target_isr=[2, 1, 3]) == rec(isr=(2, 1, 3))


def test_leader_epoch_bump_on_new_replica_set_disjoint() -> None:
    assert change(FOO, target_replicas=[2, 1, 4]) == rec(replicas=(2, 1, 4), leader=1)


def test_isr_change_and_leader_change() -> None:
    assert change(FOO, target_isr=[2, 3]) == rec(isr=(2, 3), leader=2)


def test_reassignment_rearranges_replicas() -> None:
    assert change(FOO, target_replicas=[3, 2, 1]) == rec(replicas=(3, 2, 1))


def test_isr_enlargement_completes_reassignment() -> None:
    assert change(BAR, target_isr=[1, 2, 3, 4]) == rec(replicas=(2, 3, 4), isr=(2, 3, 4), leader=2,
                                                        removing_replicas=(), adding_replicas=())


def test_revert_reassignment() -> None:
    assert change(BAR, target_replicas=[1, 2, 3], target_isr=[1, 2, 3], target_removing=[], target_adding=[]) == rec(
        replicas=(1, 2, 3), leader=1, removing_replicas=(), adding_replicas=())


def test_removing_replica_reassignment() -> None:
    assert change(FOO, target_replicas=[1, 2, 3], target_removing=[3]) == rec(replicas=(1, 2), isr=(2, 1), leader=1)


def test_adding_replica_reassignment() -> None:
    assert change(FOO, target_replicas=[1, 2, 3, 4], target_adding=[4]) == rec(replicas=(1, 2, 3, 4), adding_replicas=(4,))


def test_unclean_leader_election() -> None:
    assert change(FOO, election=kd.UNCLEAN, target_isr=[3]) == rec(isr=(2,), leader=2, leader_recovery_state=1)
    assert change(OFFLINE, lambda r: r == 1, election=kd.UNCLEAN) == rec(isr=(1,), leader=1, leader_recovery_state=1)
    assert change(OFFLINE, lambda r: r == 1, election=kd.UNCLEAN, target_isr=[2]) == rec(
        isr=(1,), leader=1, leader_recovery_state=1)


def test_no_leader_epoch_bump_on_empty_target_isr() -> None:
    """KAFKA-16624: an empty target ISR is not written without ELR, so no shrink bump either."""
    p = PartitionRegistration((2,), (2,), leader=2, leader_epoch=100, partition_epoch=200)
    assert change(p, lambda r: r != 2, target_isr=[]) == rec(leader=-1)


# ----------------------------------------------------------------------------- broker events


def _cluster(brokers: int = 3) -> MetadataImage:
    image = EMPTY_IMAGE
    for b in range(brokers):
        reg = kd.register_broker(b, 10 + b, uuid.UUID(int=b + 1), [("PLAINTEXT", "127.0.0.1", 9000 + b, 0)], None, {}, ())
        image = apply_delta(image, [MetadataRecord(0, reg.API_KEY, 0, reg)])[0]
        image = _apply(image, kd.broker_unfenced(image, b))
    return image


def _apply(image: MetadataImage, records: list[Any]) -> MetadataImage:
    return apply_delta(image, [MetadataRecord(0, r.API_KEY, 0, r) for r in records])[0]


def _part(image: MetadataImage, topic: str = "t", p: int = 0) -> PartitionRegistration:
    t = image.topic_by_name(topic)
    assert t is not None
    return t.partitions[p]


def test_fence_shrinks_isrs_bumps_epochs_and_keeps_the_last_member() -> None:
    image = _cluster()
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[0, 1, 2], [1, 0], [0]]))
    records = kd.broker_fenced(image, 0)
    assert isinstance(records[-1], BrokerRegistrationChangeRecord) and records[-1].fenced == kd.FENCE
    image = _apply(image, records)
    led = _part(image, p=0)
    assert (led.leader, led.isr, led.leader_epoch) == (1, (1, 2), 1)
    followed = _part(image, p=1)  # follower left the ISR: epoch bumped under migration
    assert (followed.leader, followed.isr, followed.leader_epoch) == (1, (1,), 1)
    alone = _part(image, p=2)  # the last ISR member stays; no leader
    assert (alone.leader, alone.isr, alone.leader_epoch) == (-1, (0,), 1)
    assert image.brokers[0].fenced
    # unfencing elects it again where it is the only ISR member (handleBrokerUnfenced)
    image = _apply(image, kd.broker_unfenced(image, 0))
    assert _part(image, p=2).leader == 0 and _part(image, p=0).leader == 1


def test_controlled_shutdown_moves_leadership_and_shrinks() -> None:
    image = _cluster()
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[0, 1, 2], [2, 0]]))
    records = kd.broker_in_controlled_shutdown(image, 0)
    assert isinstance(records[0], BrokerRegistrationChangeRecord) and records[0].in_controlled_shutdown == 1
    image = _apply(image, records)
    assert (_part(image, p=0).leader, _part(image, p=0).isr) == (1, (1, 2))
    assert (_part(image, p=1).leader, _part(image, p=1).isr) == (2, (2,))
    assert kd.broker_in_controlled_shutdown(image, 0) == []  # nothing left, already flagged


def test_create_topic_isr_is_active_replicas_and_refuses_all_fenced() -> None:
    image = _cluster()
    image = _apply(image, kd.broker_fenced(image, 1))
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[1, 2, 0]]))
    assert (_part(image).leader, _part(image).isr, _part(image).leader_epoch) == (2, (2, 0), 0)
    with pytest.raises(kd.KraftError, match="are fenced or in controlled shutdown"):
        kd.create_topic(image, "u", uuid.UUID(int=10), [[1]])
    with pytest.raises(kd.KraftError, match="TOPIC_ALREADY_EXISTS"):
        kd.create_topic(image, "t", uuid.UUID(int=11), [[0]])


def test_preferred_election_and_errors() -> None:
    image = _cluster()
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[0, 1]]))
    assert kd.elect_leader(image, "t", 0, False) == kd.ELECTION_NOT_NEEDED
    image = _apply(image, kd.broker_fenced(image, 0))
    assert kd.elect_leader(image, "t", 0, False) == kd.PREFERRED_LEADER_NOT_AVAILABLE
    image = _apply(image, kd.broker_unfenced(image, 0))
    image = _apply(image, [kd.alter_partition(image, "t", 0, [1, 0])])
    out = kd.elect_leader(image, "t", 0, False)
    assert not isinstance(out, str) and out.leader == 0
    assert kd.imbalanced(image) == [out]
    with pytest.raises(kd.KraftError, match="UNKNOWN_TOPIC_OR_PARTITION"):
        kd.elect_leader(image, "t", 5, False)


# ----------------------------------------------------------------------------- properties

replicas_st = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)


@st.composite
def partitions(draw: st.DrawFn) -> PartitionRegistration:
    replicas = draw(replicas_st)
    isr = [r for r in replicas if draw(st.booleans())] or replicas[:1]
    leader = draw(st.sampled_from([*isr, -1]))
    return PartitionRegistration(tuple(replicas), tuple(isr), leader=leader, leader_epoch=5, partition_epoch=7)


@settings(max_examples=300, deadline=None)
@given(partitions(), st.sets(st.integers(0, 5)), st.sampled_from([kd.ONLINE, kd.PREFERRED]), st.data())
def test_a_clean_change_keeps_kafkas_invariants(p: PartitionRegistration, active: set[int], election: str,
                                                data: st.DataObject) -> None:
    target = data.draw(st.sampled_from([None, [r for r in p.isr if r in active]]))
    r = kd.partition_change(p, FOO_ID, 0, active.__contains__, target_isr=target, election=election)
    new = p if r is None else p.merge(r)
    assert set(new.isr) <= set(new.replicas) and new.isr  # the ISR never empties without ELR
    assert new.leader == -1 or (new.leader in new.isr and new.leader in active)  # a clean leader is live, in the ISR
    assert new.leader_epoch >= p.leader_epoch and new.partition_epoch >= p.partition_epoch
    if not set(p.isr) <= set(new.isr):  # every shrink bumps the leader epoch under migration
        assert new.leader_epoch == p.leader_epoch + 1
    if r is not None:
        assert new != p or r.leader != kd.NO_LEADER_CHANGE


def test_unclean_election_only_in_topics_that_enable_it() -> None:
    """RCM:1690-1717 and RCM:1940-1942: a leaderless partition whose ISR is a fenced broker gets
    an out-of-ISR leader only when its topic enables unclean election; ISR [leader], RECOVERING."""
    image = _cluster()
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[1, 0]]))
    image = _apply(image, kd.create_topic(image, "u", uuid.UUID(int=10), [[1, 0]]))
    image = _apply(image, kd.broker_fenced(image, 0))
    image = _apply(image, kd.broker_fenced(image, 1))
    assert (_part(image).leader, _part(image).isr) == (-1, (1,)) and kd.leaderless(image)
    unfenced = kd.broker_unfenced(image, 0)  # ONLINE election: 0 is not in the ISR
    assert len(unfenced) == 1
    image = _apply(image, unfenced)
    assert _part(image).leader == -1 and kd.elect_unclean_leaders(image, frozenset()) == []
    records = kd.elect_unclean_leaders(image, frozenset({"t"}))
    assert len(records) == 1 and (records[0].leader, records[0].isr, records[0].leader_recovery_state) == (0, (0,), 1)
    image = _apply(image, records)
    assert (_part(image).leader, _part(image).isr) == (0, (0,)) and _part(image, "u").leader == -1
    assert kd.elect_unclean_leaders(image, frozenset({"t"}), max_elections=0) == []


def test_unfencing_elects_uncleanly_in_an_unclean_topic() -> None:
    image = _cluster()
    image = _apply(image, kd.create_topic(image, "t", uuid.UUID(int=9), [[1, 0]]))
    image = _apply(image, kd.broker_fenced(image, 0))
    image = _apply(image, kd.broker_fenced(image, 1))
    image = _apply(image, kd.broker_unfenced(image, 0, frozenset({"t"})))
    assert (_part(image).leader, _part(image).isr) == (0, (0,))
