"""Properties over random small, valid metadata logs (hypothesis):
- the partial-image contract: where _needs_full_image is false, propagating a delta over the
  image restricted to _touched_topics gives byte-identical sends and the same touched topics;
- the image does not depend on how records are grouped into deltas;
- every send decodes, delivered sends go only to registered, unfenced target brokers, and
  everything comes in the canonical order (brokers ascending, topics by name, partitions by index);
- an oracle: MigrationPropagator's steps called on the batch in Kafka's order, visiting brokers,
  topics and partitions in random order, accumulate the same requests (content, brokers,
  dropped flags) as the propagator's canonical plan."""

from __future__ import annotations

import random
import uuid
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch, UpdateType
from ctrlbatch.context import ReplicaAssignment, TopicPartition
from ctrlbatch.replay.image.deltas import Delta
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, apply_delta
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    FEATURE_LEVEL_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNREGISTER_BROKER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.channel_context import MigrationControllerChannelContext
from ctrlbatch.replay.propagate.propagator import (
    ReplayOptions,
    Send,
    _needs_full_image,
    _partial_image,
    _touched_topics,
    propagate_delta,
    propagate_image,
)
from ctrlbatch.replay.schema.record_classes import record_class
from ctrlbatch.requests import decode_request

BROKERS = [1, 2, 3, 4]
REPLICAS = [1, 2, 3, 4, 5]  # broker 5 never registers
NAMES = ["a", "b", "c"]


class _Log:
    """A model of the cluster that only emits records Kafka's replay accepts."""

    def __init__(self) -> None:
        self.records: list[MetadataRecord] = []
        self.brokers: dict[int, int] = {}  # id -> epoch
        self.topics: dict[uuid.UUID, tuple[str, dict[int, list[int]]]] = {}
        self.next_id = 1

    def add(self, type_id: int, version: int = 0, **fields: Any) -> None:
        cls = record_class(type_id)
        assert cls is not None
        self.records.append(MetadataRecord(len(self.records), type_id, version, cls(**fields)))


def _register(log: _Log, d: st.DataObject) -> None:
    b = d.draw(st.sampled_from(BROKERS))
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"h{b}", port=9000 + b, security_protocol=0)
    epoch = len(log.records)
    log.brokers[b] = epoch
    log.add(REGISTER_BROKER_RECORD, 2, broker_id=b, broker_epoch=epoch, end_points=(ep,), fenced=d.draw(st.booleans()),
            is_migrating_zk_broker=d.draw(st.booleans()))


def _change_broker(log: _Log, d: st.DataObject) -> None:
    if not log.brokers:
        return _register(log, d)
    b = d.draw(st.sampled_from(sorted(log.brokers)))
    if d.draw(st.integers(0, 5)) == 0:
        del log.brokers[b]
        log.add(UNREGISTER_BROKER_RECORD, broker_id=b, broker_epoch=0)
        return None
    log.add(BROKER_REGISTRATION_CHANGE_RECORD, 1, broker_id=b, broker_epoch=log.brokers[b],
            fenced=d.draw(st.sampled_from([-1, 0, 1])), in_controlled_shutdown=d.draw(st.sampled_from([0, 1])))
    return None


def _create_topic(log: _Log, d: st.DataObject) -> None:
    name = d.draw(st.sampled_from(NAMES))
    for tid, (n, _p) in list(log.topics.items()):
        if n == name:  # Kafka's controller never reuses a live name: delete it first (maybe same delta)
            del log.topics[tid]
            log.add(REMOVE_TOPIC_RECORD, topic_id=tid)
    tid = uuid.UUID(int=log.next_id)
    log.next_id += 1
    log.add(TOPIC_RECORD, name=name, topic_id=tid)
    parts: dict[int, list[int]] = {}
    for p in range(d.draw(st.integers(0, 3))):
        replicas = d.draw(st.lists(st.sampled_from(REPLICAS), min_size=1, max_size=3, unique=True))
        parts[p] = replicas
        log.add(PARTITION_RECORD, partition_id=p, topic_id=tid, replicas=replicas, isr=replicas, leader=replicas[0],
                leader_epoch=0, partition_epoch=0)
    log.topics[tid] = (name, parts)


def _change_partition(log: _Log, d: st.DataObject) -> None:
    candidates = [(tid, p) for tid, (_n, parts) in log.topics.items() for p in parts]
    if not candidates:
        return _create_topic(log, d)
    tid, p = d.draw(st.sampled_from(sorted(candidates)))
    replicas = log.topics[tid][1][p]
    fields: dict[str, Any] = {}
    if d.draw(st.booleans()):
        fields["isr"] = d.draw(st.lists(st.sampled_from(replicas), unique=True))
    if d.draw(st.booleans()):
        fields["leader"] = d.draw(st.sampled_from([-1, *replicas]))
    if d.draw(st.booleans()):
        new = d.draw(st.lists(st.sampled_from(REPLICAS), min_size=1, max_size=3, unique=True))
        fields["replicas"] = new
        log.topics[tid][1][p] = new
    log.add(PARTITION_CHANGE_RECORD, partition_id=p, topic_id=tid, **fields)
    return None


def _remove_topic(log: _Log, d: st.DataObject) -> None:
    if not log.topics:
        return _create_topic(log, d)
    tid = d.draw(st.sampled_from(sorted(log.topics)))
    del log.topics[tid]
    log.add(REMOVE_TOPIC_RECORD, topic_id=tid)
    return None


_OPS = [_register, _change_broker, _create_topic, _change_partition, _change_partition, _remove_topic]


@st.composite
def logs(draw: Any) -> list[Delta]:
    d = draw(st.data())
    log = _Log()
    log.add(FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=draw(st.sampled_from([8, 21])))
    for _ in range(draw(st.integers(1, 30))):
        draw(st.sampled_from(_OPS))(log, d)
    deltas, start = [], 0
    while start < len(log.records):
        end = start + draw(st.integers(1, 4))
        records = tuple(log.records[start:end])
        deltas.append(Delta(records[-1].offset, 1000 + start, 7, records, draw(st.sampled_from([None, 9]))))
        start = end
    return deltas


options = st.builds(ReplayOptions, targets=st.sampled_from(["all", "migrating"]), correct_offline=st.booleans(),
                    zk_controller_epoch=st.sampled_from([None, 3]))


def _bytes(sends: list[Send]) -> list[tuple[int, bool, bytes]]:
    return [(s.broker, s.dropped, s.request.encode(correlation_id=0, client_id="x")) for s in sends]


def _topics_of(image: MetadataImage, ids: frozenset[uuid.UUID]) -> dict[uuid.UUID, Any]:
    return {t: v for t, v in image.topics.items() if t in ids}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), options)
def test_a_partial_image_gives_the_same_sends_as_the_full_image(deltas: list[Delta], opts: ReplayOptions) -> None:
    image = EMPTY_IMAGE
    for delta in deltas:
        full, sends = propagate_delta(image, delta, opts)
        if not _needs_full_image(image, delta.records, opts):
            small = _partial_image(image, delta.records)
            touched = _touched_topics(delta.records, image).ids
            assert set(small.topics) <= touched and small.brokers == image.brokers
            part, part_sends = propagate_delta(small, delta, opts)
            assert _bytes(part_sends) == _bytes(sends)
            new_ids = frozenset(touched | set(part.topics))
            assert _topics_of(part, new_ids) == _topics_of(full, new_ids)
            assert (part.brokers, part.metadata_version, part.offset) == (full.brokers, full.metadata_version, full.offset)
        image = full


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), options)
def test_sends_decode_and_deliver_only_to_unfenced_registered_targets(deltas: list[Delta], opts: ReplayOptions) -> None:
    image = EMPTY_IMAGE
    for delta in deltas:
        image, sends = propagate_delta(image, delta, opts)
        for s in sends:
            reg = image.brokers[s.broker]  # the batch addresses registered brokers only
            target = opts.targets == "all" or reg.is_migrating_zk_broker
            assert s.dropped == (reg.fenced or not target)
            body = decode_request(s.request.encode(correlation_id=1, client_id="x")[4:]).body
            assert body.broker_epoch == reg.epoch
        _check_canonical_order(sends)


def _check_canonical_order(sends: list[Send]) -> None:
    """Per batch: LeaderAndIsr, UpdateMetadata, StopReplica, each to brokers ascending (one
    request per broker); in each body topics by name, partitions by index, brokers by id."""
    # batch A is UNKNOWN, batch B INCREMENTAL (the logs here are at 3.4-IV0+, where both carry Type)
    kinds = [0 if s.request.api_key != 5 and s.request.builder.update_type == 0 else 1 for s in sends]  # type: ignore[union-attr]
    assert kinds == sorted(kinds)
    batches = [[s for s, k in zip(sends, kinds, strict=True) if k == kind] for kind in (0, 1)]
    for batch in batches:
        ranks = [_RANK[s.request.api_key] for s in batch]
        assert ranks == sorted(ranks)
    for batch in batches:
        for api in (4, 6, 5):
            brokers = [s.broker for s in batch if s.request.api_key == api]
            assert brokers == sorted(set(brokers))
        for s in batch:
            body: Any = decode_request(s.request.encode(correlation_id=1, client_id="x")[4:]).body
            names = [t.topic_name for t in body.topic_states]
            assert names == sorted(set(names))
            for t in body.topic_states:
                indexes = [p.partition_index for p in t.partition_states]
                assert indexes == sorted(set(indexes))
            if s.request.api_key == 6:
                assert [b.id for b in body.live_brokers] == sorted(b.id for b in body.live_brokers)
            if s.request.api_key == 4:
                assert [n.broker_id for n in body.live_leaders] == sorted(n.broker_id for n in body.live_leaders)


_RANK = {4: 0, 6: 1, 5: 2}


@settings(max_examples=100, deadline=None)
@given(logs())
def test_the_image_does_not_depend_on_the_delta_grouping(deltas: list[Delta]) -> None:
    stepwise = EMPTY_IMAGE
    for delta in deltas:
        stepwise, _ = apply_delta(stepwise, delta.records)
    at_once, _ = apply_delta(EMPTY_IMAGE, [r for delta in deltas for r in delta.records])
    assert (stepwise.brokers, stepwise.topics, stepwise.topic_ids_by_name, stepwise.metadata_version) == (
        at_once.brokers, at_once.topics, at_once.topic_ids_by_name, at_once.metadata_version
    )


# ----------------------------------------------------------------------------- oracle: Kafka's call order


def _kafka_call_order(prev: MetadataImage, delta: Delta, opts: ReplayOptions, rnd: random.Random) -> list[Send]:
    """MigrationPropagator.sendRPCsToBrokersFromMetadataDelta as the reference's §5.2 steps, calling
    the batch in Kafka's order but visiting brokers, topics and partitions in a random order
    (Kafka's are hash maps): the propagator's canonical order must not change the content."""
    image, changes = apply_delta(prev, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    if not changes.touched:
        return []
    header = delta.epoch if opts.zk_controller_epoch is None else opts.zk_controller_epoch
    controller = delta.leader_id if delta.leader_id is not None else opts.controller_id

    def target(reg: Any) -> bool:
        return opts.targets == "all" or bool(reg.is_migrating_zk_broker)

    def shuffled(items: Any) -> list[Any]:
        out = list(items)
        rnd.shuffle(out)
        return out

    channel = {b for b, reg in image.brokers.items() if target(reg) and not reg.fenced}
    sends: list[Send] = []

    class _Transport:
        def send(self, broker: int, request: Any, callback: Any) -> None:
            sends.append(Send(broker, request, broker not in channel))

    ctx = MigrationControllerChannelContext(image)
    batch = ControllerBrokerRequestBatch(controller, ctx, opts.ibp or image.metadata_version, _Transport(),
                                         kraft_controller=True)
    changed_zk = shuffled(b for b, reg in changes.changed_brokers.items()
                          if reg is not None and target(reg) and not reg.fenced)
    old_zk = shuffled(b for b, reg in image.brokers.items() if target(reg) and b not in changed_zk)
    everything = shuffled((TopicPartition(t.name, p), reg) for t in image.topics.values()
                          for p, reg in t.partitions.items())

    def assignment(reg: Any) -> ReplicaAssignment:
        return ReplicaAssignment(reg.replicas, reg.adding_replicas, reg.removing_replicas)

    batch.new_batch()  # batch A
    if changed_zk:
        batch.add_update_metadata_request_for_brokers(changed_zk, [tp for tp, _ in everything])
    if changes.changed_brokers:
        batch.add_update_metadata_request_for_brokers(old_zk)
    batch.send_requests_to_brokers(header)
    batch.new_batch()  # batch B
    batch.set_update_type(UpdateType.INCREMENTAL)
    if changed_zk:
        for tp, reg in everything:
            hosts = shuffled(b for b in reg.replicas if b in changed_zk)
            info = ctx.partition_leadership_info(tp)
            if hosts and info is not None:
                batch.add_leader_and_isr_request_for_brokers(hosts, tp, info, assignment(reg), True)
    if changes.deleted_topics or changes.changed_topics:
        batch.add_update_metadata_request_for_brokers(old_zk)
    for old in shuffled(changes.deleted_topics.values()):
        for p, reg in shuffled(old.partitions.items()):
            tp = TopicPartition(old.name, p)
            online = [r for r in reg.replicas if r in image.brokers]
            offline = [r for r in reg.replicas if r not in online] if opts.correct_offline else online
            batch.add_stop_replica_request_for_brokers(shuffled(reg.replicas), tp, True)
            batch.add_update_metadata_request_for_brokers_with_state(
                old_zk, tp, controller_epoch=header, leader=-2, leader_epoch=0, partition_epoch=0,
                isr=reg.isr, replicas=reg.replicas, offline_replicas=offline,
            )
    for change in shuffled(changes.changed_topics.values()):
        for p, reg in shuffled(change.partitions.items()):
            tp = TopicPartition(change.name, p)
            info = ctx.partition_leadership_info(tp)
            if info is not None:
                batch.add_leader_and_isr_request_for_brokers(reg.replicas, tp, info, assignment(reg), True)
            before = change.previous.get(p)
            removed = shuffled(set(before.replicas) - set(reg.replicas)) if before is not None else []
            if removed:
                batch.add_stop_replica_request_for_brokers(removed, tp, True)
    batch.send_requests_to_brokers(header)
    return sends


def _canonical(value: Any) -> Any:
    """A decoded body with every list of structs sorted (order is checked elsewhere); lists of
    ids (replicas, ISR) keep their order, which is content."""
    if attrs.has(type(value)):
        return tuple((f.name, _canonical(getattr(value, f.name))) for f in attrs.fields(type(value)))
    if isinstance(value, list | tuple):
        items = [_canonical(v) for v in value]
        return tuple(sorted(items, key=repr)) if value and attrs.has(type(value[0])) else tuple(items)
    return value


def _content(sends: list[Send]) -> list[tuple[Any, ...]]:
    out = []
    for s in sends:
        decoded = decode_request(s.request.encode(correlation_id=1, client_id="x")[4:])
        update_type = getattr(decoded.body, "type", None)
        out.append((update_type, s.request.api_key, s.request.version, s.broker, s.dropped, _canonical(decoded.body)))
    return sorted(out, key=repr)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), options, st.randoms(use_true_random=False))
def test_the_sends_hold_what_kafka_s_call_order_accumulates(
    deltas: list[Delta], opts: ReplayOptions, rnd: random.Random
) -> None:
    image = EMPTY_IMAGE
    for delta in deltas:
        oracle = _kafka_call_order(image, delta, opts, rnd)
        image, sends = propagate_delta(image, delta, opts)
        assert _content(sends) == _content(oracle)


def _kafka_image_call_order(image: MetadataImage, opts: ReplayOptions, rnd: random.Random) -> list[Send]:
    """sendRPCsToBrokersFromMetadataImage as the reference's §6 steps, in a random visit order."""
    header = image.epoch if opts.zk_controller_epoch is None else opts.zk_controller_epoch
    channel = {b for b, reg in image.brokers.items()
               if (opts.targets == "all" or reg.is_migrating_zk_broker) and not reg.fenced}
    sends: list[Send] = []

    class _Transport:
        def send(self, broker: int, request: Any, callback: Any) -> None:
            sends.append(Send(broker, request, broker not in channel))

    ctx = MigrationControllerChannelContext(image)
    batch = ControllerBrokerRequestBatch(opts.controller_id, ctx, opts.ibp or image.metadata_version, _Transport(),
                                         kraft_controller=True)
    zk = [b for b, reg in image.brokers.items() if opts.targets == "all" or reg.is_migrating_zk_broker]
    partitions = [(TopicPartition(t.name, p), reg) for t in image.topics.values() for p, reg in t.partitions.items()]
    rnd.shuffle(zk)
    rnd.shuffle(partitions)
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers(zk, [tp for tp, _ in partitions])
    batch.send_requests_to_brokers(header)
    batch.new_batch()
    batch.set_update_type(UpdateType.FULL)
    for tp, reg in partitions:
        info = ctx.partition_leadership_info(tp)
        if info is not None:
            assignment = ReplicaAssignment(reg.replicas, reg.adding_replicas, reg.removing_replicas)
            batch.add_leader_and_isr_request_for_brokers(reg.replicas, tp, info, assignment, True)
    batch.send_requests_to_brokers(header)
    return sends


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), options, st.randoms(use_true_random=False))
def test_the_image_path_holds_what_kafka_s_call_order_accumulates_in_canonical_order(
    deltas: list[Delta], opts: ReplayOptions, rnd: random.Random
) -> None:
    image = EMPTY_IMAGE
    for delta in deltas:
        image, _ = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    sends = propagate_image(image, opts)
    assert _content(sends) == _content(_kafka_image_call_order(image, opts, rnd))
    assert all(s.request.api_key != 5 for s in sends)  # never StopReplica from an image
    _check_canonical_order(sends)
