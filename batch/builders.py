"""Request builders: the inputs of one control request, turned into a body object or bytes.

Rules: like Kafka's AbstractControlRequest.Builder subclasses (LAIRq, UMRq, SRRq `build`),
each builder holds what the batch decided and builds the request at its pinned version.
`build(broker_epoch)` gives the message object (the reference, field for field as Kafka
builds it). `encoded()` gives the body bytes with the broker epoch of the first recipient, for
sharing among brokers: only the 8 epoch bytes at `epoch_offset` differ per broker. LeaderAndIsr
bodies are assembled from partition states encoded once per send (a state shared by several
brokers is encoded once); tests check the bytes equal build(epoch).encode(version).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

import attrs

from ctrlbatch.requests import (
    ZERO_UUID,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaTopicState,
    StopReplicaTopicV1,
    UnsupportedVersionError,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from ctrlbatch.requests.layout import array_count, fixed_offset, struct_encoder
from ctrlbatch.requests.model import Message

_EPOCH = struct.Struct(">q")


def _group_by_topic(states: Sequence[Any]) -> dict[str, list[Any]]:
    """Partition states grouped by topic, topics in first-seen order, states in input order."""
    groups: dict[str, list[Any]] = {}
    for s in states:
        g = groups.get(s.topic_name)
        if g is None:
            groups[s.topic_name] = [s]
        else:
            g.append(s)
    return groups


def _topic_states(cls: Any, states: Sequence[Any], topic_ids: dict[str, uuid.UUID]) -> tuple[Any, ...]:
    """The builders' v2+/v5+ grouping: one topic state per topic, ZERO_UUID for a topic without an id."""
    return tuple(
        cls(topic_name=t, topic_id=topic_ids.get(t, ZERO_UUID), partition_states=tuple(ss))
        for t, ss in _group_by_topic(states).items()
    )


def epoch_offset(cls: type[Message], version: int) -> int | None:
    if version not in cls.MESSAGE.field("BrokerEpoch").versions:
        return None
    return fixed_offset(cls.SPEC, version, "BrokerEpoch")


@attrs.define(slots=True, eq=False)
class SharedBody:
    """Encoded bytes shared by several brokers' requests, with the broker epoch's place in them."""

    data: bytes
    epoch_offset: int | None

    def pieces(self, broker_epoch: int) -> list[bytes | memoryview]:
        if self.epoch_offset is None:
            return [self.data]
        off = self.epoch_offset
        view = memoryview(self.data)
        return [view[:off], _EPOCH.pack(broker_epoch), view[off + 8 :]]


@attrs.define(slots=True, eq=False)
class LeaderAndIsrBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    partition_states: list[LeaderAndIsrPartitionState]
    topic_ids: dict[str, uuid.UUID]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]
    kraft_controller: bool = False
    update_type: int = 0
    api_key = 4

    def build(self, broker_epoch: int) -> LeaderAndIsrRequest:
        v = self.version
        topic_states: tuple[LeaderAndIsrTopicState, ...] = ()
        ungrouped: tuple[LeaderAndIsrPartitionState, ...] = ()
        if v >= 2:
            topic_states = _topic_states(LeaderAndIsrTopicState, self.partition_states, self.topic_ids)
        else:
            ungrouped = tuple(self.partition_states)
        return LeaderAndIsrRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 7 else False,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            type=self.update_type if v >= 5 else 0,
            ungrouped_partition_states=ungrouped,
            topic_states=topic_states,
            live_leaders=self.live_leaders,
        )

    def encode_body(self, broker_epoch: int, memo: dict[Any, bytes]) -> bytes:
        """The body bytes. memo is shared by the builders of one send: it keeps each state's
        bytes under id(state) (the batch holds the states meanwhile, so an id names one state)
        and each topic's header, so a state sent to several brokers is encoded once."""
        v = self.version
        flexible = LeaderAndIsrRequest.is_flexible(v)
        env = self.build_no_states(broker_epoch).encode(v)
        field = "TopicStates" if v >= 2 else "UngroupedPartitionStates"
        off = fixed_offset(LeaderAndIsrRequest.SPEC, v, field)
        assert off is not None
        empty = 1 if flexible else 4
        parts: list[bytes] = [env[:off]]
        ap = parts.append
        states = self.partition_states
        enc_state = struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", v)
        memo_get = memo.get
        if v >= 2:
            groups = _group_by_topic(states)
            ap(array_count(len(groups), flexible))
            enc_topic = struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrTopicState", v)
            tail = b"\x00" if flexible else b""
            cut = empty + len(tail)
            for topic, group in groups.items():
                head = memo_get(topic)
                if head is None:
                    tb = enc_topic(LeaderAndIsrTopicState(topic_name=topic, topic_id=self.topic_ids.get(topic, ZERO_UUID)))
                    head = memo[topic] = tb[: len(tb) - cut]
                ap(head)
                ap(array_count(len(group), flexible))
                for s in group:
                    b = memo_get(id(s))
                    if b is None:
                        b = memo[id(s)] = enc_state(s)
                    ap(b)
                ap(tail)
        else:
            ap(array_count(len(states), flexible))
            for s in states:
                b = memo_get(id(s))
                if b is None:
                    b = memo[id(s)] = enc_state(s)
                ap(b)
        ap(env[off + empty :])
        return b"".join(parts)

    def build_no_states(self, broker_epoch: int) -> LeaderAndIsrRequest:
        """The request without partition states: the envelope they are spliced into."""
        v = self.version
        return LeaderAndIsrRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 7 else False,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            type=self.update_type if v >= 5 else 0,
            live_leaders=self.live_leaders,
        )


_PLAINTEXT = 0


@attrs.define(slots=True, eq=False)
class UpdateMetadataBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    partition_states: list[UpdateMetadataPartitionState]
    live_brokers: tuple[UpdateMetadataBroker, ...]
    topic_ids: dict[str, uuid.UUID]
    kraft_controller: bool = False
    update_type: int = 0
    api_key = 6

    def check_endpoints(self) -> None:
        """UMRq.Builder's endpoint rules for the oldest versions (UMRq:37-78)."""
        v = self.version
        for b in self.live_brokers:
            if v == 0:
                if len(b.endpoints) != 1:
                    raise UnsupportedVersionError("UpdateMetadataRequest v0 requires a single endpoint")
                if b.endpoints[0].security_protocol != _PLAINTEXT:
                    raise UnsupportedVersionError("UpdateMetadataRequest v0 only handles PLAINTEXT endpoints")
            elif v < 3:
                for e in b.endpoints:
                    if e.listener and e.listener != _DEFAULT_LISTENER.get(e.security_protocol):
                        shown = ", ".join(_endpoint_text(x) for x in b.endpoints)
                        raise UnsupportedVersionError(
                            "UpdateMetadataRequest v0-v3 does not support custom listeners, request version: "
                            f"{v}, endpoints: [{shown}]"
                        )

    def build(self, broker_epoch: int) -> UpdateMetadataRequest:
        v = self.version
        self.check_endpoints()
        live = self.live_brokers
        if v == 0:
            live = tuple(
                attrs.evolve(b, v0_host=b.endpoints[0].host, v0_port=b.endpoints[0].port, endpoints=()) for b in live
            )
        topic_states: tuple[UpdateMetadataTopicState, ...] = ()
        ungrouped: tuple[UpdateMetadataPartitionState, ...] = ()
        if v >= 5:
            topic_states = _topic_states(UpdateMetadataTopicState, self.partition_states, self.topic_ids)
        else:
            ungrouped = tuple(self.partition_states)
        return UpdateMetadataRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 8 else False,
            type=self.update_type if v >= 8 else 0,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            ungrouped_partition_states=ungrouped,
            topic_states=topic_states,
            live_brokers=live,
        )

    def encode_body(self, broker_epoch: int, memo: dict[Any, bytes]) -> bytes:
        return self.build(broker_epoch).encode(self.version)


_DEFAULT_LISTENER = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _endpoint_text(e: Any) -> str:
    return f"UpdateMetadataEndpoint(port={e.port}, host='{e.host}', listener='{e.listener}', securityProtocol={e.security_protocol})"


@attrs.define(slots=True, eq=False)
class StopReplicaBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    delete_partitions: bool
    topic_states: list[tuple[str, list[StopReplicaPartitionState]]]
    kraft_controller: bool = False
    api_key = 5

    def build(self, broker_epoch: int) -> StopReplicaRequest:
        v = self.version
        kw: dict[str, Any] = {}
        if v >= 3:
            kw["topic_states"] = tuple(
                StopReplicaTopicState(topic_name=t, partition_states=tuple(ps)) for t, ps in self.topic_states
            )
        elif v >= 1:
            kw["topics"] = tuple(
                StopReplicaTopicV1(name=t, partition_indexes=tuple(p.partition_index for p in ps)) for t, ps in self.topic_states
            )
        else:
            kw["ungrouped_partitions"] = tuple(
                StopReplicaPartitionV0(topic_name=t, partition_index=p.partition_index) for t, ps in self.topic_states for p in ps
            )
        return StopReplicaRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 4 else False,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            delete_partitions=self.delete_partitions if v < 3 else False,
            **kw,
        )

    def encode_body(self, broker_epoch: int, memo: dict[Any, bytes]) -> bytes:
        return self.build(broker_epoch).encode(self.version)


Builder = LeaderAndIsrBuilder | UpdateMetadataBuilder | StopReplicaBuilder
