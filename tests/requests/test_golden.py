"""Golden byte vectors, written by hand from the wire-format rules (shared/reference/kafka-wire-format.md
§2-§5 and the JSON specs in shared/kafka/message/), not produced by running the encoder.

Each vector is one hex string per field (or group of fields), with a comment saying what it is. Conventions:
- classic (non-flexible) versions: int16 string length, int32 array count, no tagged sections;
- flexible versions: unsigned varint N+1 for strings and arrays (0 = null), and every struct, the message and
  each array element, ends with a tagged-field section: count, then (tag, size, value)... ascending; a struct
  with nothing tagged ends with `00`.

Every golden case asserts encode(version) == vector AND decode(vector, version) == object.
"""

from __future__ import annotations

import uuid

import pytest

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DecodedRequest,
    Feature,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
    LeaderAndIsrTopicState,
    Listener,
    RequestHeader,
    ResponseHeader,
    StopReplicaPartitionError,
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaResponse,
    StopReplicaTopicState,
    StopReplicaTopicV1,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    UpdateMetadataTopicState,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)


def hexv(*parts: str) -> bytes:
    """The bytes of hex fragments (spaces allowed between bytes)."""
    return bytes.fromhex(" ".join(parts))


# uuid: most significant 64 bits then least significant 64 bits, big-endian = the UUID's hex digits in order
U1 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
U1_HEX = "00112233445566778899aabbccddeeff"
U2 = uuid.UUID("01234567-89ab-cdef-fedc-ba9876543210")
U2_HEX = "0123456789abcdeffedcba9876543210"
U3 = uuid.UUID("f0e0d0c0-b0a0-9080-7060-504030201000")
U3_HEX = "f0e0d0c0b0a090807060504030201000"

GOLDEN: list = []


def golden(name: str, cls: type, version: int, obj: object, vector: bytes) -> None:
    GOLDEN.append(pytest.param(cls, version, obj, vector, id=name))


# ------------------------------------------------------------------------------------------------------------
# LeaderAndIsrRequest (key 4, flexible 4+)

golden(
    "LeaderAndIsrRequest-v1",
    LeaderAndIsrRequest,
    1,
    LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=5,
        ungrouped_partition_states=[
            LeaderAndIsrPartitionState(
                topic_name="foo",
                partition_index=0,
                controller_epoch=5,
                leader=2,
                leader_epoch=7,
                isr=(2, 3),
                partition_epoch=9,
                replicas=(2, 3),
                is_new=True,
            )
        ],
        live_leaders=[LeaderAndIsrLiveLeader(broker_id=2, host_name="b2", port=9092)],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000005",  # ControllerEpoch 5   (no BrokerEpoch before v2, no Type before v5)
        "00000001",  # UngroupedPartitionStates: int32 count 1
        "0003 666f6f",  # . TopicName "foo" (v0-1 only)
        "00000000",  # . PartitionIndex 0
        "00000005",  # . ControllerEpoch 5
        "00000002",  # . Leader 2
        "00000007",  # . LeaderEpoch 7
        "00000002 00000002 00000003",  # . Isr [2, 3]
        "00000009",  # . PartitionEpoch 9
        "00000002 00000002 00000003",  # . Replicas [2, 3]  (no Adding/RemovingReplicas before v3)
        "01",  # . IsNew true (v1+)
        "00000001",  # LiveLeaders: count 1
        "00000002",  # . BrokerId 2
        "0002 6232",  # . HostName "b2"
        "00002384",  # . Port 9092
    ),
)

golden(
    "LeaderAndIsrRequest-v7",
    LeaderAndIsrRequest,
    7,
    LeaderAndIsrRequest(
        controller_id=3000,
        is_k_raft_controller=True,
        controller_epoch=12,
        broker_epoch=(1 << 32) + 5,
        type=1,
        topic_states=[
            LeaderAndIsrTopicState(
                topic_name="topic",
                topic_id=U2,
                partition_states=[
                    LeaderAndIsrPartitionState(
                        partition_index=1,
                        controller_epoch=12,
                        leader=1001,
                        leader_epoch=-1,
                        isr=(1001, 1002),
                        partition_epoch=6,
                        replicas=(1001, 1002, 1003),
                        adding_replicas=(1003,),
                        removing_replicas=(),
                        is_new=False,
                        leader_recovery_state=1,
                    )
                ],
            )
        ],
        live_leaders=[LeaderAndIsrLiveLeader(broker_id=1001, host_name="h1", port=9093)],
    ),
    hexv(
        "00000bb8",  # ControllerId 3000
        "01",  # isKRaftController true (v7+)
        "0000000c",  # ControllerEpoch 12
        "00000001 00000005",  # BrokerEpoch 2^32 + 5 (int64)
        "01",  # Type 1 (int8, v5+)
        "02",  # TopicStates: compact count 1 (varint 1+1)
        "06 746f706963",  # . TopicName "topic" (varint 5+1)
        U2_HEX,  # . TopicId (v5+)
        "02",  # . PartitionStates: 1
        "00000001",  # . . PartitionIndex 1
        "0000000c",  # . . ControllerEpoch 12
        "000003e9",  # . . Leader 1001
        "ffffffff",  # . . LeaderEpoch -1
        "03 000003e9 000003ea",  # . . Isr [1001, 1002]
        "00000006",  # . . PartitionEpoch 6
        "04 000003e9 000003ea 000003eb",  # . . Replicas [1001, 1002, 1003]
        "02 000003eb",  # . . AddingReplicas [1003]
        "01",  # . . RemovingReplicas []
        "00",  # . . IsNew false
        "01",  # . . LeaderRecoveryState 1 (v6+)
        "00",  # . . tagged fields: none
        "00",  # . tagged fields (topic): none
        "02",  # LiveLeaders: 1
        "000003e9",  # . BrokerId 1001
        "03 6831",  # . HostName "h1"
        "00002385",  # . Port 9093
        "00",  # . tagged fields: none
        "00",  # top-level tagged fields: none
    ),
)

# ------------------------------------------------------------------------------------------------------------
# LeaderAndIsrResponse

golden(
    "LeaderAndIsrResponse-v0",
    LeaderAndIsrResponse,
    0,
    LeaderAndIsrResponse(
        error_code=0,
        partition_errors=[LeaderAndIsrPartitionError(topic_name="foo", partition_index=1, error_code=6)],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "00000001",  # PartitionErrors: int32 count 1
        "0003 666f6f",  # . TopicName "foo"
        "00000001",  # . PartitionIndex 1
        "0006",  # . ErrorCode 6 (NOT_LEADER_OR_FOLLOWER)
    ),
)

golden(
    "LeaderAndIsrResponse-v4",
    LeaderAndIsrResponse,
    4,
    LeaderAndIsrResponse(
        error_code=0,
        partition_errors=[
            LeaderAndIsrPartitionError(topic_name="foo", partition_index=0, error_code=0),
            LeaderAndIsrPartitionError(topic_name="foo", partition_index=1, error_code=6),
        ],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "03",  # PartitionErrors: compact count 2
        "04 666f6f  00000000  0000  00",  # . "foo", partition 0, error 0, no tags
        "04 666f6f  00000001  0006  00",  # . "foo", partition 1, error 6, no tags
        "00",  # top-level tagged fields: none
    ),
)

golden(
    "LeaderAndIsrResponse-v5",
    LeaderAndIsrResponse,
    5,
    LeaderAndIsrResponse(
        error_code=0,
        topics=[
            LeaderAndIsrTopicError(
                topic_id=U1,
                partition_errors=[
                    LeaderAndIsrPartitionError(partition_index=2, error_code=0),
                    LeaderAndIsrPartitionError(partition_index=3, error_code=-1),
                ],
            )
        ],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "02",  # Topics: compact count 1   (PartitionErrors at top level only in v0-4)
        U1_HEX,  # . TopicId
        "03",  # . PartitionErrors: 2   (no TopicName from v5)
        "00000002 0000 00",  # . . partition 2, error 0, no tags
        "00000003 ffff 00",  # . . partition 3, error -1 (UNKNOWN_SERVER_ERROR), no tags
        "00",  # . tagged fields (topic): none
        "00",  # top-level tagged fields: none
    ),
)

# ------------------------------------------------------------------------------------------------------------
# StopReplicaRequest (key 5, flexible 2+)

golden(
    "StopReplicaRequest-v0",
    StopReplicaRequest,
    0,
    StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        delete_partitions=False,
        ungrouped_partitions=[StopReplicaPartitionV0(topic_name="foo", partition_index=3)],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000002",  # ControllerEpoch 2   (no BrokerEpoch in v0)
        "00",  # DeletePartitions false
        "00000001",  # UngroupedPartitions: int32 count 1
        "0003 666f6f",  # . TopicName "foo"
        "00000003",  # . PartitionIndex 3
    ),
)

golden(
    "StopReplicaRequest-v1",
    StopReplicaRequest,
    1,
    StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        delete_partitions=True,
        topics=[StopReplicaTopicV1(name="foo", partition_indexes=(0, 1))],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000002",  # ControllerEpoch 2
        "ffffffffffffffff",  # BrokerEpoch -1 (the default, v1+)
        "01",  # DeletePartitions true
        "00000001",  # Topics: int32 count 1
        "0003 666f6f",  # . Name "foo"
        "00000002 00000000 00000001",  # . PartitionIndexes [0, 1]
    ),
)

golden(
    "StopReplicaRequest-v2",
    StopReplicaRequest,
    2,
    StopReplicaRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        delete_partitions=True,
        topics=[StopReplicaTopicV1(name="foo", partition_indexes=(0, 1, 2))],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000002",  # ControllerEpoch 2
        "0000000000000003",  # BrokerEpoch 3
        "01",  # DeletePartitions true (v0-2)
        "02",  # Topics: compact count 1
        "04 666f6f",  # . Name "foo"
        "04 00000000 00000001 00000002",  # . PartitionIndexes [0, 1, 2]
        "00",  # . tagged fields: none
        "00",  # top-level tagged fields: none
    ),
)

_SR_V34_TOPICS = [
    StopReplicaTopicState(
        topic_name="foo",
        partition_states=[
            StopReplicaPartitionState(partition_index=0, leader_epoch=-2, delete_partition=True),
            StopReplicaPartitionState(partition_index=1, leader_epoch=5, delete_partition=False),
        ],
    )
]
_SR_V34_TOPICS_HEX = [
    "02",  # TopicStates: compact count 1
    "04 666f6f",  # . TopicName "foo"
    "03",  # . PartitionStates: 2
    "00000000 fffffffe 01 00",  # . . partition 0, LeaderEpoch -2 (EpochDuringDelete), delete true, no tags
    "00000001 00000005 00 00",  # . . partition 1, LeaderEpoch 5, delete false, no tags
    "00",  # . tagged fields (topic): none
    "00",  # top-level tagged fields: none
]

golden(
    "StopReplicaRequest-v3",
    StopReplicaRequest,
    3,
    StopReplicaRequest(controller_id=1, controller_epoch=2, broker_epoch=10, topic_states=_SR_V34_TOPICS),
    hexv(
        "00000001",  # ControllerId 1   (isKRaftController only from v4)
        "00000002",  # ControllerEpoch 2
        "000000000000000a",  # BrokerEpoch 10   (DeletePartitions gone from v3)
        *_SR_V34_TOPICS_HEX,
    ),
)

golden(
    "StopReplicaRequest-v4",
    StopReplicaRequest,
    4,
    StopReplicaRequest(
        controller_id=1,
        is_k_raft_controller=True,
        controller_epoch=2,
        broker_epoch=10,
        topic_states=_SR_V34_TOPICS,
    ),
    hexv(
        "00000001",  # ControllerId 1
        "01",  # isKRaftController true (v4+)
        "00000002",  # ControllerEpoch 2
        "000000000000000a",  # BrokerEpoch 10
        *_SR_V34_TOPICS_HEX,
    ),
)

# ------------------------------------------------------------------------------------------------------------
# StopReplicaResponse

golden(
    "StopReplicaResponse-v1",
    StopReplicaResponse,
    1,
    StopReplicaResponse(
        error_code=0,
        partition_errors=[StopReplicaPartitionError(topic_name="foo", partition_index=0, error_code=3)],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "00000001",  # PartitionErrors: int32 count 1
        "0003 666f6f",  # . TopicName "foo"
        "00000000",  # . PartitionIndex 0
        "0003",  # . ErrorCode 3 (UNKNOWN_TOPIC_OR_PARTITION)
    ),
)

golden(
    "StopReplicaResponse-v2",
    StopReplicaResponse,
    2,
    StopReplicaResponse(
        error_code=0,
        partition_errors=[StopReplicaPartitionError(topic_name="foo", partition_index=0, error_code=3)],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "02",  # PartitionErrors: compact count 1
        "04 666f6f",  # . TopicName "foo"
        "00000000",  # . PartitionIndex 0
        "0003",  # . ErrorCode 3
        "00",  # . tagged fields: none
        "00",  # top-level tagged fields: none
    ),
)

golden(
    "StopReplicaResponse-v2-utf8",
    StopReplicaResponse,
    2,
    StopReplicaResponse(
        error_code=0,
        partition_errors=[
            StopReplicaPartitionError(topic_name="\u00e9\u4e2d", partition_index=1, error_code=0)
        ],
    ),
    hexv(
        "0000",  # ErrorCode 0
        "02",  # PartitionErrors: 1
        "06 c3a9 e4b8ad",  # . TopicName "\u00e9\u4e2d": 2 characters, 5 UTF-8 bytes -> varint 5+1
        "00000001",  # . PartitionIndex 1
        "0000",  # . ErrorCode 0
        "00",  # . tagged fields: none
        "00",  # top-level tagged fields: none
    ),
)

# ------------------------------------------------------------------------------------------------------------
# UpdateMetadataRequest (key 6, flexible 6+)

golden(
    "UpdateMetadataRequest-v0",
    UpdateMetadataRequest,
    0,
    UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        ungrouped_partition_states=[
            UpdateMetadataPartitionState(
                topic_name="foo",
                partition_index=0,
                controller_epoch=2,
                leader=1,
                leader_epoch=3,
                isr=(1,),
                zk_version=4,
                replicas=(1,),
            )
        ],
        live_brokers=[UpdateMetadataBroker(id=1, v0_host="h", v0_port=9092)],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000002",  # ControllerEpoch 2   (no BrokerEpoch before v5)
        "00000001",  # UngroupedPartitionStates: int32 count 1
        "0003 666f6f",  # . TopicName "foo"
        "00000000",  # . PartitionIndex 0
        "00000002",  # . ControllerEpoch 2
        "00000001",  # . Leader 1
        "00000003",  # . LeaderEpoch 3
        "00000001 00000001",  # . Isr [1]
        "00000004",  # . ZkVersion 4
        "00000001 00000001",  # . Replicas [1]   (no OfflineReplicas before v4)
        "00000001",  # LiveBrokers: count 1
        "00000001",  # . Id 1
        "0001 68",  # . V0Host "h" (v0 only)
        "00002384",  # . V0Port 9092 (v0 only; no Endpoints, no Rack)
    ),
)

golden(
    "UpdateMetadataRequest-v5",
    UpdateMetadataRequest,
    5,
    UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=[
            UpdateMetadataTopicState(
                topic_name="foo",
                partition_states=[
                    UpdateMetadataPartitionState(
                        partition_index=0,
                        controller_epoch=2,
                        leader=1,
                        leader_epoch=3,
                        isr=(1, 2),
                        zk_version=4,
                        replicas=(1, 2),
                        offline_replicas=(2,),
                    )
                ],
            )
        ],
        live_brokers=[
            UpdateMetadataBroker(
                id=1,
                endpoints=[
                    UpdateMetadataEndpoint(port=9092, host="h", listener="PLAINTEXT", security_protocol=0)
                ],
                rack=None,
            ),
            UpdateMetadataBroker(id=2, endpoints=[], rack="r1"),
        ],
    ),
    hexv(
        "00000001",  # ControllerId 1
        "00000002",  # ControllerEpoch 2
        "0000000000000003",  # BrokerEpoch 3 (v5+)
        "00000001",  # TopicStates: int32 count 1 (v5+)
        "0003 666f6f",  # . TopicName "foo"   (no TopicId before v7)
        "00000001",  # . PartitionStates: count 1
        "00000000",  # . . PartitionIndex 0   (no TopicName here from v5)
        "00000002",  # . . ControllerEpoch 2
        "00000001",  # . . Leader 1
        "00000003",  # . . LeaderEpoch 3
        "00000002 00000001 00000002",  # . . Isr [1, 2]
        "00000004",  # . . ZkVersion 4
        "00000002 00000001 00000002",  # . . Replicas [1, 2]
        "00000001 00000002",  # . . OfflineReplicas [2]
        "00000002",  # LiveBrokers: count 2
        "00000001",  # . Id 1
        "00000001",  # . Endpoints: count 1
        "00002384",  # . . Port 9092 (Port comes before Host)
        "0001 68",  # . . Host "h"
        "0009 504c41494e54455854",  # . . Listener "PLAINTEXT" (v3+)
        "0000",  # . . SecurityProtocol 0
        "ffff",  # . Rack null (int16 -1)
        "00000002",  # . Id 2
        "00000000",  # . Endpoints: empty
        "0002 7231",  # . Rack "r1"
    ),
)

_UMR_V8_TOPICS = [
    UpdateMetadataTopicState(
        topic_name="foo",
        topic_id=U1,
        partition_states=[
            UpdateMetadataPartitionState(
                partition_index=0,
                controller_epoch=2,
                leader=1,
                leader_epoch=3,
                isr=(1, 2),
                zk_version=4,
                replicas=(1, 2),
                offline_replicas=(),
            )
        ],
    )
]
_UMR_V8_BROKERS = [
    UpdateMetadataBroker(
        id=1,
        endpoints=[UpdateMetadataEndpoint(port=9092, host="h", listener="PLAINTEXT", security_protocol=0)],
        rack=None,
    )
]


def _umr_v8_hex(kraft: str, partition_tags: str, top_tags: str) -> bytes:
    return hexv(
        "00000001",  # ControllerId 1
        kraft,  # isKRaftController (v8+)
        # (Type, tag 0, has no fixed position: it is only ever in the top-level tagged section)
        "00000002",  # ControllerEpoch 2
        "0000000000000003",  # BrokerEpoch 3
        "02",  # TopicStates: compact count 1
        "04 666f6f",  # . TopicName "foo"
        U1_HEX,  # . TopicId (v7+)
        "02",  # . PartitionStates: 1
        "00000000",  # . . PartitionIndex 0
        "00000002",  # . . ControllerEpoch 2
        "00000001",  # . . Leader 1
        "00000003",  # . . LeaderEpoch 3
        "03 00000001 00000002",  # . . Isr [1, 2]
        "00000004",  # . . ZkVersion 4
        "03 00000001 00000002",  # . . Replicas [1, 2]
        "01",  # . . OfflineReplicas []
        partition_tags,  # . . tagged fields of the partition state
        "00",  # . tagged fields (topic): none
        "02",  # LiveBrokers: 1
        "00000001",  # . Id 1
        "02",  # . Endpoints: 1
        "00002384",  # . . Port 9092
        "02 68",  # . . Host "h"
        "0a 504c41494e54455854",  # . . Listener "PLAINTEXT" (varint 9+1)
        "0000",  # . . SecurityProtocol 0
        "00",  # . . tagged fields (endpoint): none
        "00",  # . Rack null (compact nullable string: 0)
        "00",  # . tagged fields (broker): none
        top_tags,  # top-level tagged fields
    )


UMR_V8_TYPE0 = _umr_v8_hex("00", "00", "00")  # Type 0 is the default: not written, empty tagged section
UMR_V8_TYPE2 = _umr_v8_hex("01", "00", "01 00 01 02")  # 1 tagged field: tag 0, size 1, Type=2 (FULL)

golden(
    "UpdateMetadataRequest-v8",
    UpdateMetadataRequest,
    8,
    UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=_UMR_V8_TOPICS,
        live_brokers=_UMR_V8_BROKERS,
    ),
    UMR_V8_TYPE0,
)

UMR_V8_TYPE2_OBJ = UpdateMetadataRequest(
    controller_id=1,
    is_k_raft_controller=True,
    type=2,
    controller_epoch=2,
    broker_epoch=3,
    topic_states=_UMR_V8_TOPICS,
    live_brokers=_UMR_V8_BROKERS,
)
golden("UpdateMetadataRequest-v8-type2", UpdateMetadataRequest, 8, UMR_V8_TYPE2_OBJ, UMR_V8_TYPE2)

# Unknown tagged fields: in the nested partition state (tag 5 with 2 bytes, and tag 200 whose varint takes two
# bytes, with an empty value), and at top level merged in ascending order with the known tag 0 (Type=1).
UMR_V8_UNKNOWN = _umr_v8_hex(
    "00",
    "02  05 02 abcd  c801 00",  # 2 fields: tag 5, size 2, abcd; tag 200 (varint c8 01), size 0
    "02  00 01 01  03 01 ff",  # 2 fields: tag 0 (Type) size 1 value 1; unknown tag 3, size 1, ff
)
UMR_V8_UNKNOWN_OBJ = UpdateMetadataRequest(
    controller_id=1,
    type=1,
    controller_epoch=2,
    broker_epoch=3,
    topic_states=[
        UpdateMetadataTopicState(
            topic_name="foo",
            topic_id=U1,
            partition_states=[
                UpdateMetadataPartitionState(
                    partition_index=0,
                    controller_epoch=2,
                    leader=1,
                    leader_epoch=3,
                    isr=(1, 2),
                    zk_version=4,
                    replicas=(1, 2),
                    offline_replicas=(),
                    unknown_tagged_fields=((5, b"\xab\xcd"), (200, b"")),
                )
            ],
        )
    ],
    live_brokers=_UMR_V8_BROKERS,
    unknown_tagged_fields=((3, b"\xff"),),
)
golden("UpdateMetadataRequest-v8-unknown-tags", UpdateMetadataRequest, 8, UMR_V8_UNKNOWN_OBJ, UMR_V8_UNKNOWN)

# ------------------------------------------------------------------------------------------------------------
# UpdateMetadataResponse

golden(
    "UpdateMetadataResponse-v5",
    UpdateMetadataResponse,
    5,
    UpdateMetadataResponse(error_code=34),
    hexv("0022"),  # ErrorCode 34; a classic version: no tagged section
)
golden(
    "UpdateMetadataResponse-v6",
    UpdateMetadataResponse,
    6,
    UpdateMetadataResponse(error_code=-1),
    hexv("ffff", "00"),  # ErrorCode -1, tagged fields: none
)

# ------------------------------------------------------------------------------------------------------------
# BrokerRegistrationRequest (key 62; every version is flexible)

golden(
    "BrokerRegistrationRequest-v0",
    BrokerRegistrationRequest,
    0,
    BrokerRegistrationRequest(
        broker_id=1,
        cluster_id="c",
        incarnation_id=U1,
        listeners=[Listener(name="L", host="h", port=65535, security_protocol=1)],
        features=[Feature(name="f", min_supported_version=1, max_supported_version=20)],
        rack=None,
    ),
    hexv(
        "00000001",  # BrokerId 1
        "02 63",  # ClusterId "c"
        U1_HEX,  # IncarnationId
        "02",  # Listeners: compact count 1
        "02 4c",  # . Name "L"
        "02 68",  # . Host "h"
        "ffff",  # . Port 65535 (uint16)
        "0001",  # . SecurityProtocol 1
        "00",  # . tagged fields: none
        "02",  # Features: 1
        "02 66",  # . Name "f"
        "0001",  # . MinSupportedVersion 1
        "0014",  # . MaxSupportedVersion 20
        "00",  # . tagged fields: none
        "00",  # Rack null
        "00",  # top-level tagged fields: none   (IsMigratingZkBroker only from v1)
    ),
)

_BR_V45_PREFIX = [
    "00000002",  # BrokerId 2
    "02 63",  # ClusterId "c"
    U1_HEX,  # IncarnationId
    "01",  # Listeners: empty
    "01",  # Features: empty
    "02 72",  # Rack "r"
    "00",  # IsMigratingZkBroker false (v1+)
    "03",  # LogDirs: compact count 2 (v2+)
    U2_HEX,  # . U2
    U3_HEX,  # . U3
    "ffffffffffffffff",  # PreviousBrokerEpoch -1 (v3+)
]


def _br(version_fields: dict) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=2, cluster_id="c", incarnation_id=U1, rack="r", log_dirs=(U2, U3), **version_fields
    )


golden("BrokerRegistrationRequest-v4", BrokerRegistrationRequest, 4, _br({}), hexv(*_BR_V45_PREFIX, "00"))
golden(
    "BrokerRegistrationRequest-v5-no-cordoned",
    BrokerRegistrationRequest,
    5,
    _br({}),
    hexv(*_BR_V45_PREFIX, "00"),
)
golden(
    "BrokerRegistrationRequest-v5",
    BrokerRegistrationRequest,
    5,
    _br({"cordoned_log_dirs": (U3,)}),
    hexv(
        *_BR_V45_PREFIX,
        "01",  # tagged fields: 1
        "00 11",  # . tag 0 (CordonedLogDirs), size 17 = 1 (count varint) + 16
        "02",  # . compact count 1
        U3_HEX,  # . U3
    ),
)

# ------------------------------------------------------------------------------------------------------------
# BrokerRegistrationResponse

golden(
    "BrokerRegistrationResponse-v0-defaults",
    BrokerRegistrationResponse,
    0,
    BrokerRegistrationResponse(),
    hexv(
        "00000000",  # ThrottleTimeMs 0
        "0000",  # ErrorCode 0
        "ffffffffffffffff",  # BrokerEpoch -1 (the default)
        "00",  # tagged fields: none
    ),
)
golden(
    "BrokerRegistrationResponse-v1",
    BrokerRegistrationResponse,
    1,
    BrokerRegistrationResponse(throttle_time_ms=1000, error_code=68, broker_epoch=0x123456789A),
    hexv(
        "000003e8",  # ThrottleTimeMs 1000
        "0044",  # ErrorCode 68
        "000000123456789a",  # BrokerEpoch
        "00",  # tagged fields: none
    ),
)

# ------------------------------------------------------------------------------------------------------------
# BrokerHeartbeatRequest (key 63; every version is flexible)

_BH_PREFIX = [
    "00000001",  # BrokerId 1
    "0000000000000005",  # BrokerEpoch 5
    "0000000000000064",  # CurrentMetadataOffset 100
    "01",  # WantFence true
    "00",  # WantShutDown false
]


def _bh(**kw: object) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=5, current_metadata_offset=100, want_fence=True, **kw
    )


golden(
    "BrokerHeartbeatRequest-v0-defaults",
    BrokerHeartbeatRequest,
    0,
    BrokerHeartbeatRequest(),
    hexv(
        "00000000",  # BrokerId 0
        "ffffffffffffffff",  # BrokerEpoch -1 (the default)
        "0000000000000000",  # CurrentMetadataOffset 0
        "00 00",  # WantFence, WantShutDown false
        "00",  # tagged fields: none
    ),
)
golden("BrokerHeartbeatRequest-v0", BrokerHeartbeatRequest, 0, _bh(), hexv(*_BH_PREFIX, "00"))
golden("BrokerHeartbeatRequest-v1-no-offline", BrokerHeartbeatRequest, 1, _bh(), hexv(*_BH_PREFIX, "00"))
golden(
    "BrokerHeartbeatRequest-v1",
    BrokerHeartbeatRequest,
    1,
    _bh(offline_log_dirs=(U1,)),
    hexv(
        *_BH_PREFIX,
        "01",  # tagged fields: 1
        "00 11",  # . tag 0 (OfflineLogDirs), size 17
        "02",  # . compact count 1
        U1_HEX,  # . U1
    ),
)
golden(
    "BrokerHeartbeatRequest-v2",
    BrokerHeartbeatRequest,
    2,
    _bh(cordoned_log_dirs=(U2, U3)),
    hexv(
        *_BH_PREFIX,
        "01",  # tagged fields: 1 (OfflineLogDirs empty = default, not written)
        "01 21",  # . tag 1 (CordonedLogDirs), size 33 = 1 + 2 * 16
        "03",  # . compact count 2
        U2_HEX,
        U3_HEX,
    ),
)
golden(
    "BrokerHeartbeatRequest-v2-both",
    BrokerHeartbeatRequest,
    2,
    _bh(offline_log_dirs=(U1,), cordoned_log_dirs=(U2, U3)),
    hexv(
        *_BH_PREFIX,
        "02",  # tagged fields: 2, ascending
        "00 11 02",  # . tag 0, size 17, count 1
        U1_HEX,
        "01 21 03",  # . tag 1, size 33, count 2
        U2_HEX,
        U3_HEX,
    ),
)
# 130 offline dirs: the array count (131 = 0x83 -> varint 83 01) and the tag size (2 + 130 * 16 = 2082 = 0x822
# -> low 7 bits 0x22 | 0x80 = a2, then 0x822 >> 7 = 0x10) both take two varint bytes.
golden(
    "BrokerHeartbeatRequest-v1-130-dirs",
    BrokerHeartbeatRequest,
    1,
    _bh(offline_log_dirs=tuple(uuid.UUID(int=i) for i in range(1, 131))),
    hexv(
        *_BH_PREFIX,
        "01",  # tagged fields: 1
        "00 a210",  # . tag 0, size 2082
        "8301",  # . compact count 130 (131)
        *["00" * 15 + f"{i:02x}" for i in range(1, 131)],  # . UUID(int=i): 15 zero bytes then i
    ),
)

# ------------------------------------------------------------------------------------------------------------
# BrokerHeartbeatResponse

golden(
    "BrokerHeartbeatResponse-v0-defaults",
    BrokerHeartbeatResponse,
    0,
    BrokerHeartbeatResponse(),
    hexv(
        "00000000",  # ThrottleTimeMs 0
        "0000",  # ErrorCode 0
        "00",  # IsCaughtUp false
        "01",  # IsFenced true (the spec default is true)
        "00",  # ShouldShutDown false
        "00",  # tagged fields: none
    ),
)
golden(
    "BrokerHeartbeatResponse-v1",
    BrokerHeartbeatResponse,
    1,
    BrokerHeartbeatResponse(throttle_time_ms=250, is_caught_up=True, is_fenced=False, should_shut_down=True),
    hexv(
        "000000fa",  # ThrottleTimeMs 250
        "0000",  # ErrorCode 0
        "01",  # IsCaughtUp true
        "00",  # IsFenced false
        "01",  # ShouldShutDown true
        "00",  # tagged fields: none
    ),
)

# ------------------------------------------------------------------------------------------------------------
# Headers

golden(
    "RequestHeader-v0",
    RequestHeader,
    0,
    RequestHeader(request_api_key=4, request_api_version=0, correlation_id=7),
    hexv("0004", "0000", "00000007"),  # api key 4, api version 0, correlation id 7 (no ClientId in v0)
)
golden(
    "RequestHeader-v1",
    RequestHeader,
    1,
    RequestHeader(request_api_key=6, request_api_version=5, correlation_id=0x01020304, client_id="1"),
    hexv("0006", "0005", "01020304", "0001 31"),  # key 6, version 5, correlation id, ClientId "1"
)
golden(
    "RequestHeader-v1-null-client",
    RequestHeader,
    1,
    RequestHeader(request_api_key=5, request_api_version=1, correlation_id=-1, client_id=None),
    hexv("0005", "0001", "ffffffff", "ffff"),  # key 5, version 1, correlation id -1, ClientId null (int16 -1)
)
golden(
    "RequestHeader-v2",
    RequestHeader,
    2,
    RequestHeader(request_api_key=4, request_api_version=7, correlation_id=1, client_id="controller"),
    hexv(
        "0004",  # RequestApiKey 4
        "0007",  # RequestApiVersion 7
        "00000001",  # CorrelationId 1
        "000a 636f6e74726f6c6c6572",  # ClientId "controller": a CLASSIC int16 string (flexibleVersions none)
        "00",  # tagged fields: none
    ),
)
golden(
    "RequestHeader-v2-null-client",
    RequestHeader,
    2,
    RequestHeader(request_api_key=63, request_api_version=1, correlation_id=2, client_id=None),
    hexv("003f", "0001", "00000002", "ffff", "00"),  # ClientId null is int16 -1 even in v2; then no tags
)
golden("ResponseHeader-v0", ResponseHeader, 0, ResponseHeader(correlation_id=7), hexv("00000007"))
golden("ResponseHeader-v1", ResponseHeader, 1, ResponseHeader(correlation_id=7), hexv("00000007", "00"))


# ------------------------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize(("cls", "version", "obj", "vector"), GOLDEN)
def test_golden(cls, version: int, obj, vector: bytes) -> None:  # type: ignore[no-untyped-def]
    assert obj.encode(version).hex(" ") == vector.hex(" ")
    assert cls.decode(vector, version) == obj


def test_golden_covers_every_message() -> None:
    names = {p.values[0].__name__ for p in GOLDEN}
    assert names == {
        "LeaderAndIsrRequest",
        "LeaderAndIsrResponse",
        "StopReplicaRequest",
        "StopReplicaResponse",
        "UpdateMetadataRequest",
        "UpdateMetadataResponse",
        "BrokerRegistrationRequest",
        "BrokerRegistrationResponse",
        "BrokerHeartbeatRequest",
        "BrokerHeartbeatResponse",
        "RequestHeader",
        "ResponseHeader",
    }
    for p in GOLDEN:  # at least one classic and one flexible version of every message that has both
        cls = p.values[0]
        assert any(q.values[0] is cls and cls.is_flexible(q.values[1]) for q in GOLDEN), cls
        if not cls.is_flexible(cls.MIN_VERSION):
            assert any(q.values[0] is cls and not cls.is_flexible(q.values[1]) for q in GOLDEN), cls


def test_unknown_tags_in_nested_struct_survive_decode_and_reencode() -> None:
    back = UpdateMetadataRequest.decode(UMR_V8_UNKNOWN, 8)
    ps = back.topic_states[0].partition_states[0]
    assert ps.unknown_tagged_fields == ((5, b"\xab\xcd"), (200, b""))
    assert back.type == 1 and back.unknown_tagged_fields == ((3, b"\xff"),)
    assert back.encode(8) == UMR_V8_UNKNOWN
    # and through the plain-data form
    again = UpdateMetadataRequest.from_dict(back.to_dict(8))
    assert again == back and again.encode(8) == UMR_V8_UNKNOWN
    # dropping them gives the vector without them (Type=1 only at top level)
    clean_partition = UpdateMetadataPartitionState(
        partition_index=0,
        controller_epoch=2,
        leader=1,
        leader_epoch=3,
        isr=(1, 2),
        zk_version=4,
        replicas=(1, 2),
    )
    assert ps.to_dict(8) == {
        **clean_partition.to_dict(8),
        "unknown_tagged_fields": [(5, b"\xab\xcd"), (200, b"")],
    }


# --- Whole frames


def test_request_frame_classic() -> None:
    body = next(p.values[2] for p in GOLDEN if p.id == "LeaderAndIsrRequest-v1")
    body_hex = next(p.values[3] for p in GOLDEN if p.id == "LeaderAndIsrRequest-v1")
    frame = (
        hexv(
            "00000059",  # size 89 = 11 (header) + 78 (body)
            "0004",  # RequestApiKey 4 (LeaderAndIsr)
            "0001",  # RequestApiVersion 1 -> request header v1 (LAIR is flexible from v4)
            "0000002a",  # CorrelationId 42
            "0001 30",  # ClientId "0" (the controller's broker id), no tagged section in header v1
        )
        + body_hex
    )
    assert len(frame) - 4 == 0x59 and len(body_hex) == 78  # the hand-computed sizes
    assert encode_request(body, 1, 42, "0") == frame
    assert decode_request(frame[4:]) == DecodedRequest(
        RequestHeader(request_api_key=4, request_api_version=1, correlation_id=42, client_id="0"), 1, body
    )


def test_request_frame_flexible() -> None:
    frame = (
        hexv(
            "0000007b",  # size 123 = 12 (header) + 111 (body)
            "0006",  # RequestApiKey 6 (UpdateMetadata)
            "0008",  # RequestApiVersion 8 -> request header v2
            "01020304",  # CorrelationId
            "0001 31",  # ClientId "1": classic int16 string even in header v2
            "00",  # header tagged fields: none
        )
        + UMR_V8_TYPE2
    )
    assert len(frame) - 4 == 0x7B and len(UMR_V8_TYPE2) == 111
    assert encode_request(UMR_V8_TYPE2_OBJ, 8, 0x01020304, "1") == frame
    assert decode_request(frame[4:]) == DecodedRequest(
        RequestHeader(request_api_key=6, request_api_version=8, correlation_id=0x01020304, client_id="1"),
        2,
        UMR_V8_TYPE2_OBJ,
    )


def test_response_frames() -> None:
    flexible = hexv(
        "00000008",  # size 8
        "00000005",  # CorrelationId 5
        "00",  # response header v1 (UMR v8 is flexible): tagged fields none
        "0000 00",  # UpdateMetadataResponse v8: ErrorCode 0, tagged fields none
    )
    assert encode_response(UpdateMetadataResponse(), 6, 8, 5) == flexible
    assert decode_response(flexible[4:], 6, 8) == (ResponseHeader(correlation_id=5), UpdateMetadataResponse())

    lair_v0 = next(p for p in GOLDEN if p.id == "LeaderAndIsrResponse-v0")
    classic = (
        hexv(
            "00000015",  # size 21 = 4 (header v0) + 17 (body)
            "00000009",  # CorrelationId 9; response header v0 has no tagged section
        )
        + lair_v0.values[3]
    )
    assert encode_response(lair_v0.values[2], 4, 0, 9) == classic
    assert decode_response(classic[4:], 4, 0) == (ResponseHeader(correlation_id=9), lair_v0.values[2])


def test_tagged_section_is_written_in_ascending_tag_order() -> None:
    # The object holds its unknown tags out of order; on the wire every tagged section is strictly
    # ascending (§3), merged with the known tag 0 (Type=1).
    obj = UpdateMetadataRequest(
        controller_id=1,
        type=1,
        controller_epoch=2,
        broker_epoch=3,
        topic_states=_UMR_V8_TOPICS,
        live_brokers=_UMR_V8_BROKERS,
        unknown_tagged_fields=((7, b"\x07"), (3, b"\xff")),
    )
    vector = _umr_v8_hex(
        "00",
        "00",
        "03  00 01 01  03 01 ff  07 01 07",  # 3 fields: tag 0 (Type=1); tag 3, size 1, ff; tag 7, size 1, 07
    )
    assert obj.encode(8).hex(" ") == vector.hex(" ")
    # decoding keeps them in wire order
    back = UpdateMetadataRequest.decode(vector, 8)
    assert back.unknown_tagged_fields == ((3, b"\xff"), (7, b"\x07"))
    assert back.encode(8) == vector
