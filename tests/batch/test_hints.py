"""The batch reads a context through ControllerChannelContext; UpdateMetadataHints, when the
context offers both of them, are found once per context (at new_batch), never per add, and give
the same requests as the ten plain members."""

from __future__ import annotations

import uuid

from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.context import MetadataVersion, TopicPartition
from ctrlbatch.testing import ChannelContextView


class CountingHints(ChannelContextView):
    """The plain view plus both hints, counting their use."""

    __slots__ = ("views", "versions")

    def __init__(self, context):
        super().__init__(context)
        self.views = 0
        self.versions = 0

    @property
    def broker_membership_version(self):
        self.versions += 1
        return self._context.broker_membership_version

    def update_metadata_view(self, partition):
        self.views += 1
        return self._context.update_metadata_view(partition)


class HalfHints(ChannelContextView):
    """Only one of the two hints: not UpdateMetadataHints, so unused."""

    __slots__ = ("views",)

    def __init__(self, context):
        super().__init__(context)
        self.views = 0

    def update_metadata_view(self, partition):
        self.views += 1
        return self._context.update_metadata_view(partition)


def _run(kt, ctx, n=6):
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(1, ctx, MetadataVersion.IBP_3_9_IV0, transport)
    batch.new_batch()
    for p in range(n):
        tp = TopicPartition("foo", p % 2)
        batch.add_leader_and_isr_request_for_brokers([1, 2], tp, kt.leadership(1, [1, 2], leader_epoch=p), kt.replica_assignment([1, 2, 3]), False)
    batch.add_update_metadata_request_for_brokers([3], [TopicPartition("bar", 0)])
    batch.send_requests_to_brokers(1)
    return {b: [r.encode(0, "c") for r, _ in items] for b, items in transport.sent.items()}


def _context(kt):
    context = kt.kafka_context({"foo": uuid.UUID(int=1), "bar": uuid.UUID(int=2)})
    for tp in (TopicPartition("foo", 0), TopicPartition("foo", 1), TopicPartition("bar", 0)):
        context.put_partition_leadership_info(tp, kt.leadership(1, [1, 2, 3], leader_epoch=4))
    context.shutting_down_broker_ids.add(3)
    return context


def test_hints_used_when_offered_and_same_bytes(kt):
    context = _context(kt)
    counting = CountingHints(context)
    with_hints = _run(kt, counting)
    assert counting.views == 7  # one per partition added to UpdateMetadata
    assert counting.versions >= 6
    assert with_hints == _run(kt, ChannelContextView(context)) == _run(kt, context)


def test_half_hints_are_not_hints(kt):
    context = _context(kt)
    half = HalfHints(context)
    assert _run(kt, half) == _run(kt, context)
    assert half.views == 0


def test_context_checked_once_per_context(kt, monkeypatch):
    calls = []
    original = ControllerBrokerRequestBatch._hints_of

    def counted(ctx):
        calls.append(ctx)
        return original(ctx)

    monkeypatch.setattr(ControllerBrokerRequestBatch, "_hints_of", staticmethod(counted))
    context = _context(kt)
    batch = ControllerBrokerRequestBatch(1, context, "3.9", RecordingTransport())
    for _ in range(3):
        batch.new_batch()
        batch.add_stop_replica_request_for_brokers([1], TopicPartition("foo", 0), False)
        batch.add_leader_and_isr_request_for_brokers([1], TopicPartition("foo", 0), kt.leadership(1, [1]), kt.replica_assignment([1]), False)
        batch.send_requests_to_brokers(1)
    assert calls == [context]
    contexts = [_context(kt), _context(kt)]
    provider = iter(contexts)
    batch = ControllerBrokerRequestBatch(1, lambda: next(provider), "3.9", RecordingTransport())
    batch.new_batch()
    batch.send_requests_to_brokers(1)
    batch.new_batch()
    assert calls == [context, *contexts]


def test_update_metadata_live_brokers_follow_the_context(kt):
    """The live-broker list is kept between sends only while the broker membership is unchanged."""
    from ctrlbatch.context import Broker, EndPoint

    context = _context(kt)
    for ctx in (context, ChannelContextView(context)):
        batch = ControllerBrokerRequestBatch(1, ctx, "3.9", RecordingTransport())

        def hosts(batch=batch):
            batch.transport.clear()
            batch.new_batch()
            batch.add_update_metadata_request_for_brokers([1])
            batch.send_requests_to_brokers(1)
            ((request, _),) = batch.transport.sent[1]
            return [(b.id, b.endpoints[0].host) for b in kt.check_wire(request).live_brokers]

        before = hosts()
        assert hosts() == before
        old = context.live_or_shutting_down_broker(2)
        new = Broker(2, [EndPoint("moved", 9092, "PLAINTEXT", "PLAINTEXT")])
        context.update_broker_metadata(old, new)
        assert hosts() == [(1, dict(before)[1]), (3, dict(before)[3]), (2, "moved")]
        context.add_live_brokers({Broker(7, [EndPoint("seven", 1, "PLAINTEXT", "PLAINTEXT")]): 5})
        assert hosts()[-1] == (7, "seven")
        context.remove_live_brokers([7])
        context.update_broker_metadata(new, old)
        assert sorted(hosts()) == sorted(before)
