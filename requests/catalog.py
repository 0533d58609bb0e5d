"""The project's own description of the messages it ships: fields, types, versions,
nullable/tagged/ignorable flags and defaults, one declaration per message.

Generated from Kafka's JSON specs by `python -m ctrlbatch.requests.specgen`; the JSON files
are the truth and tests/requests/test_catalog.py compares this module with them field by
field. BEYOND_JSON lists what is here and not in those files (KIP-1066, SOURCE.txt);
NOT_IN_SHARED names the messages those files lack (specgen.PAST_SHARED, Kafka 3.9).
"""

# ruff: noqa: E501
from .spec import field, message, struct


REQUEST_HEADER = message(
    "RequestHeader",
    "header",
    None,
    "0-2",
    "2+",
    field("RequestApiKey", "int16", "0+", about="The API key of this request."),
    field("RequestApiVersion", "int16", "0+", about="The API version of this request."),
    field("CorrelationId", "int32", "0+", about="The correlation ID of this request."),
    field(
        "ClientId",
        "string",
        "1+",
        nullable="1+",
        ignorable=True,
        flexible="none",
        about="The client ID string.",
    ),
)


RESPONSE_HEADER = message(
    "ResponseHeader",
    "header",
    None,
    "0-1",
    "1+",
    field("CorrelationId", "int32", "0+", about="The correlation ID of this response."),
)


_LEADER_AND_ISR_PARTITION_STATE = struct(
    "LeaderAndIsrPartitionState",
    "0+",
    field(
        "TopicName",
        "string",
        "0-1",
        ignorable=True,
        about="The topic name.  This is only present in v0 or v1.",
    ),
    field("PartitionIndex", "int32", "0+", about="The partition index."),
    field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
    field("Leader", "int32", "0+", about="The broker ID of the leader."),
    field("LeaderEpoch", "int32", "0+", about="The leader epoch."),
    field("Isr", "[]int32", "0+", about="The in-sync replica IDs."),
    field(
        "PartitionEpoch",
        "int32",
        "0+",
        about="The current epoch for the partition. The epoch is a monotonically increasing value which is incremented after every partition change. (Since the LeaderAndIsr request is only used by the legacy controller, this corresponds to the zkVersion)",
    ),
    field("Replicas", "[]int32", "0+", about="The replica IDs."),
    field(
        "AddingReplicas",
        "[]int32",
        "3+",
        ignorable=True,
        about="The replica IDs that we are adding this partition to, or null if no replicas are being added.",
    ),
    field(
        "RemovingReplicas",
        "[]int32",
        "3+",
        ignorable=True,
        about="The replica IDs that we are removing this partition from, or null if no replicas are being removed.",
    ),
    field(
        "IsNew",
        "bool",
        "1+",
        default="false",
        ignorable=True,
        about="Whether the replica should have existed on the broker or not.",
    ),
    field(
        "LeaderRecoveryState",
        "int8",
        "6+",
        default="0",
        about="1 if the partition is recovering from an unclean leader election; 0 otherwise.",
    ),
)


LEADER_AND_ISR_REQUEST = message(
    "LeaderAndIsrRequest",
    "request",
    4,
    "0-7",
    "4+",
    field("ControllerId", "int32", "0+", about="The current controller ID."),
    field(
        "isKRaftController",
        "bool",
        "7+",
        default="false",
        about="If KRaft controller id is used during migration. See KIP-866",
    ),
    field("ControllerEpoch", "int32", "0+", about="The current controller epoch."),
    field("BrokerEpoch", "int64", "2+", default="-1", ignorable=True, about="The current broker epoch."),
    field(
        "Type", "int8", "5+", about="The type that indicates whether all topics are included in the request"
    ),
    field(
        "UngroupedPartitionStates",
        "[]LeaderAndIsrPartitionState",
        "0-1",
        about="The state of each partition, in a v0 or v1 message.",
        struct=_LEADER_AND_ISR_PARTITION_STATE,
    ),
    field(
        "TopicStates",
        "[]LeaderAndIsrTopicState",
        "2+",
        about="Each topic.",
        struct=struct(
            "LeaderAndIsrTopicState",
            "2+",
            field("TopicName", "string", "2+", about="The topic name."),
            field("TopicId", "uuid", "5+", ignorable=True, about="The unique topic ID."),
            field(
                "PartitionStates",
                "[]LeaderAndIsrPartitionState",
                "2+",
                about="The state of each partition",
                struct=_LEADER_AND_ISR_PARTITION_STATE,
            ),
        ),
    ),
    field(
        "LiveLeaders",
        "[]LeaderAndIsrLiveLeader",
        "0+",
        about="The current live leaders.",
        struct=struct(
            "LeaderAndIsrLiveLeader",
            "0+",
            field("BrokerId", "int32", "0+", about="The leader's broker ID."),
            field("HostName", "string", "0+", about="The leader's hostname."),
            field("Port", "int32", "0+", about="The leader's port."),
        ),
    ),
)


_LEADER_AND_ISR_PARTITION_ERROR = struct(
    "LeaderAndIsrPartitionError",
    "0+",
    field("TopicName", "string", "0-4", ignorable=True, about="The topic name."),
    field("PartitionIndex", "int32", "0+", about="The partition index."),
    field("ErrorCode", "int16", "0+", about="The partition error code, or 0 if there was no error."),
)


LEADER_AND_ISR_RESPONSE = message(
    "LeaderAndIsrResponse",
    "response",
    4,
    "0-7",
    "4+",
    field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
    field(
        "PartitionErrors",
        "[]LeaderAndIsrPartitionError",
        "0-4",
        about="Each partition in v0 to v4 message.",
        struct=_LEADER_AND_ISR_PARTITION_ERROR,
    ),
    field(
        "Topics",
        "[]LeaderAndIsrTopicError",
        "5+",
        about="Each topic",
        struct=struct(
            "LeaderAndIsrTopicError",
            "5+",
            field("TopicId", "uuid", "5+", about="The unique topic ID"),
            field(
                "PartitionErrors",
                "[]LeaderAndIsrPartitionError",
                "5+",
                about="Each partition.",
                struct=_LEADER_AND_ISR_PARTITION_ERROR,
            ),
        ),
    ),
)


STOP_REPLICA_REQUEST = message(
    "StopReplicaRequest",
    "request",
    5,
    "0-4",
    "2+",
    field("ControllerId", "int32", "0+", about="The controller id."),
    field(
        "isKRaftController",
        "bool",
        "4+",
        default="false",
        about="If KRaft controller id is used during migration. See KIP-866",
    ),
    field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
    field("BrokerEpoch", "int64", "1+", default="-1", ignorable=True, about="The broker epoch."),
    field("DeletePartitions", "bool", "0-2", about="Whether these partitions should be deleted."),
    field(
        "UngroupedPartitions",
        "[]StopReplicaPartitionV0",
        "0",
        about="The partitions to stop.",
        struct=struct(
            "StopReplicaPartitionV0",
            "0",
            field("TopicName", "string", "0", about="The topic name."),
            field("PartitionIndex", "int32", "0", about="The partition index."),
        ),
    ),
    field(
        "Topics",
        "[]StopReplicaTopicV1",
        "1-2",
        about="The topics to stop.",
        struct=struct(
            "StopReplicaTopicV1",
            "1-2",
            field("Name", "string", "1-2", about="The topic name."),
            field("PartitionIndexes", "[]int32", "1-2", about="The partition indexes."),
        ),
    ),
    field(
        "TopicStates",
        "[]StopReplicaTopicState",
        "3+",
        about="Each topic.",
        struct=struct(
            "StopReplicaTopicState",
            "3+",
            field("TopicName", "string", "3+", about="The topic name."),
            field(
                "PartitionStates",
                "[]StopReplicaPartitionState",
                "3+",
                about="The state of each partition",
                struct=struct(
                    "StopReplicaPartitionState",
                    "3+",
                    field("PartitionIndex", "int32", "3+", about="The partition index."),
                    field("LeaderEpoch", "int32", "3+", default="-1", about="The leader epoch."),
                    field("DeletePartition", "bool", "3+", about="Whether this partition should be deleted."),
                ),
            ),
        ),
    ),
)


STOP_REPLICA_RESPONSE = message(
    "StopReplicaResponse",
    "response",
    5,
    "0-4",
    "2+",
    field(
        "ErrorCode", "int16", "0+", about="The top-level error code, or 0 if there was no top-level error."
    ),
    field(
        "PartitionErrors",
        "[]StopReplicaPartitionError",
        "0+",
        about="The responses for each partition.",
        struct=struct(
            "StopReplicaPartitionError",
            "0+",
            field("TopicName", "string", "0+", about="The topic name."),
            field("PartitionIndex", "int32", "0+", about="The partition index."),
            field(
                "ErrorCode",
                "int16",
                "0+",
                about="The partition error code, or 0 if there was no partition error.",
            ),
        ),
    ),
)


_UPDATE_METADATA_PARTITION_STATE = struct(
    "UpdateMetadataPartitionState",
    "0+",
    field(
        "TopicName", "string", "0-4", ignorable=True, about="In older versions of this RPC, the topic name."
    ),
    field("PartitionIndex", "int32", "0+", about="The partition index."),
    field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
    field("Leader", "int32", "0+", about="The ID of the broker which is the current partition leader."),
    field("LeaderEpoch", "int32", "0+", about="The leader epoch of this partition."),
    field("Isr", "[]int32", "0+", about="The brokers which are in the ISR for this partition."),
    field("ZkVersion", "int32", "0+", about="The Zookeeper version."),
    field("Replicas", "[]int32", "0+", about="All the replicas of this partition."),
    field(
        "OfflineReplicas",
        "[]int32",
        "4+",
        ignorable=True,
        about="The replicas of this partition which are offline.",
    ),
)


UPDATE_METADATA_REQUEST = message(
    "UpdateMetadataRequest",
    "request",
    6,
    "0-8",
    "6+",
    field("ControllerId", "int32", "0+", about="The controller id."),
    field(
        "isKRaftController",
        "bool",
        "8+",
        default="false",
        about="If KRaft controller id is used during migration. See KIP-866",
    ),
    field(
        "Type",
        "int8",
        "8+",
        tagged="8+",
        tag=0,
        default="0",
        about="Indicates if this request is a Full metadata snapshot (2), Incremental (1), or Unknown (0). Using during ZK migration, see KIP-866",
    ),
    field("ControllerEpoch", "int32", "0+", about="The controller epoch."),
    field("BrokerEpoch", "int64", "5+", default="-1", ignorable=True, about="The broker epoch."),
    field(
        "UngroupedPartitionStates",
        "[]UpdateMetadataPartitionState",
        "0-4",
        about="In older versions of this RPC, each partition that we would like to update.",
        struct=_UPDATE_METADATA_PARTITION_STATE,
    ),
    field(
        "TopicStates",
        "[]UpdateMetadataTopicState",
        "5+",
        about="In newer versions of this RPC, each topic that we would like to update.",
        struct=struct(
            "UpdateMetadataTopicState",
            "5+",
            field("TopicName", "string", "5+", about="The topic name."),
            field("TopicId", "uuid", "7+", ignorable=True, about="The topic id."),
            field(
                "PartitionStates",
                "[]UpdateMetadataPartitionState",
                "5+",
                about="The partition that we would like to update.",
                struct=_UPDATE_METADATA_PARTITION_STATE,
            ),
        ),
    ),
    field(
        "LiveBrokers",
        "[]UpdateMetadataBroker",
        "0+",
        struct=struct(
            "UpdateMetadataBroker",
            "0+",
            field("Id", "int32", "0+", about="The broker id."),
            field("V0Host", "string", "0", ignorable=True, about="The broker hostname."),
            field("V0Port", "int32", "0", ignorable=True, about="The broker port."),
            field(
                "Endpoints",
                "[]UpdateMetadataEndpoint",
                "1+",
                ignorable=True,
                about="The broker endpoints.",
                struct=struct(
                    "UpdateMetadataEndpoint",
                    "1+",
                    field("Port", "int32", "1+", about="The port of this endpoint"),
                    field("Host", "string", "1+", about="The hostname of this endpoint"),
                    field("Listener", "string", "3+", ignorable=True, about="The listener name."),
                    field("SecurityProtocol", "int16", "1+", about="The security protocol type."),
                ),
            ),
            field(
                "Rack",
                "string",
                "2+",
                nullable="0+",
                ignorable=True,
                about="The rack which this broker belongs to.",
            ),
        ),
    ),
)


UPDATE_METADATA_RESPONSE = message(
    "UpdateMetadataResponse",
    "response",
    6,
    "0-8",
    "6+",
    field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
)


BROKER_REGISTRATION_REQUEST = message(
    "BrokerRegistrationRequest",
    "request",
    62,
    "0-5",
    "0+",
    field("BrokerId", "int32", "0+", about="The broker ID."),
    field("ClusterId", "string", "0+", about="The cluster id of the broker process."),
    field("IncarnationId", "uuid", "0+", about="The incarnation id of the broker process."),
    field(
        "Listeners",
        "[]Listener",
        "0+",
        about="The listeners of this broker",
        struct=struct(
            "Listener",
            "0+",
            field("Name", "string", "0+", about="The name of the endpoint."),
            field("Host", "string", "0+", about="The hostname."),
            field("Port", "uint16", "0+", about="The port."),
            field("SecurityProtocol", "int16", "0+", about="The security protocol."),
        ),
    ),
    field(
        "Features",
        "[]Feature",
        "0+",
        about="The features on this broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.",
        struct=struct(
            "Feature",
            "0+",
            field("Name", "string", "0+", about="The feature name."),
            field("MinSupportedVersion", "int16", "0+", about="The minimum supported feature level."),
            field("MaxSupportedVersion", "int16", "0+", about="The maximum supported feature level."),
        ),
    ),
    field("Rack", "string", "0+", nullable="0+", about="The rack which this broker is in."),
    field(
        "IsMigratingZkBroker",
        "bool",
        "1+",
        default="false",
        about="If the required configurations for ZK migration are present, this value is set to true",
    ),
    field(
        "LogDirs",
        "[]uuid",
        "2+",
        ignorable=True,
        about="Log directories configured in this broker which are available.",
    ),
    field(
        "PreviousBrokerEpoch",
        "int64",
        "3+",
        default="-1",
        ignorable=True,
        about="The epoch before a clean shutdown.",
    ),
    field("CordonedLogDirs", "[]uuid", "5+", tagged="5+", tag=0, about="Log directories that are cordoned."),
)


BROKER_REGISTRATION_RESPONSE = message(
    "BrokerRegistrationResponse",
    "response",
    62,
    "0-5",
    "0+",
    field(
        "ThrottleTimeMs",
        "int32",
        "0+",
        about="Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.",
    ),
    field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
    field(
        "BrokerEpoch",
        "int64",
        "0+",
        default="-1",
        about="The broker's assigned epoch, or -1 if none was assigned.",
    ),
)


BROKER_HEARTBEAT_REQUEST = message(
    "BrokerHeartbeatRequest",
    "request",
    63,
    "0-2",
    "0+",
    field("BrokerId", "int32", "0+", about="The broker ID."),
    field("BrokerEpoch", "int64", "0+", default="-1", about="The broker epoch."),
    field(
        "CurrentMetadataOffset",
        "int64",
        "0+",
        about="The highest metadata offset which the broker has reached.",
    ),
    field("WantFence", "bool", "0+", about="True if the broker wants to be fenced, false otherwise."),
    field("WantShutDown", "bool", "0+", about="True if the broker wants to be shut down, false otherwise."),
    field(
        "OfflineLogDirs",
        "[]uuid",
        "1+",
        tagged="1+",
        tag=0,
        about="Log directories that failed and went offline.",
    ),
    field("CordonedLogDirs", "[]uuid", "2+", tagged="2+", tag=1, about="Log directories that are cordoned."),
)


BROKER_HEARTBEAT_RESPONSE = message(
    "BrokerHeartbeatResponse",
    "response",
    63,
    "0-2",
    "0+",
    field(
        "ThrottleTimeMs",
        "int32",
        "0+",
        about="Duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.",
    ),
    field("ErrorCode", "int16", "0+", about="The error code, or 0 if there was no error."),
    field(
        "IsCaughtUp",
        "bool",
        "0+",
        default="false",
        about="True if the broker has approximately caught up with the latest metadata.",
    ),
    field("IsFenced", "bool", "0+", default="true", about="True if the broker is fenced."),
    field("ShouldShutDown", "bool", "0+", about="True if the broker should proceed with its shutdown."),
)


API_VERSIONS_REQUEST = message(
    "ApiVersionsRequest",
    "request",
    18,
    "0-4",
    "3+",
    field("ClientSoftwareName", "string", "3+", ignorable=True, about="The name of the client."),
    field("ClientSoftwareVersion", "string", "3+", ignorable=True, about="The version of the client."),
)


API_VERSIONS_RESPONSE = message(
    "ApiVersionsResponse",
    "response",
    18,
    "0-4",
    "3+",
    field("ErrorCode", "int16", "0+", about="The top-level error code."),
    field(
        "ApiKeys",
        "[]ApiVersion",
        "0+",
        about="The APIs supported by the broker.",
        struct=struct(
            "ApiVersion",
            "0+",
            field("ApiKey", "int16", "0+", about="The API index."),
            field("MinVersion", "int16", "0+", about="The minimum supported version, inclusive."),
            field("MaxVersion", "int16", "0+", about="The maximum supported version, inclusive."),
        ),
    ),
    field(
        "ThrottleTimeMs",
        "int32",
        "1+",
        ignorable=True,
        about="The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.",
    ),
    field(
        "SupportedFeatures",
        "[]SupportedFeatureKey",
        "3+",
        tagged="3+",
        tag=0,
        ignorable=True,
        about="Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.",
        struct=struct(
            "SupportedFeatureKey",
            "3+",
            field("Name", "string", "3+", about="The name of the feature."),
            field("MinVersion", "int16", "3+", about="The minimum supported version for the feature."),
            field("MaxVersion", "int16", "3+", about="The maximum supported version for the feature."),
        ),
    ),
    field(
        "FinalizedFeaturesEpoch",
        "int64",
        "3+",
        tagged="3+",
        tag=1,
        default="-1",
        ignorable=True,
        about="The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of -1 is special and represents unknown epoch.",
    ),
    field(
        "FinalizedFeatures",
        "[]FinalizedFeatureKey",
        "3+",
        tagged="3+",
        tag=2,
        ignorable=True,
        about="List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0.",
        struct=struct(
            "FinalizedFeatureKey",
            "3+",
            field("Name", "string", "3+", about="The name of the feature."),
            field(
                "MaxVersionLevel",
                "int16",
                "3+",
                about="The cluster-wide finalized max version level for the feature.",
            ),
            field(
                "MinVersionLevel",
                "int16",
                "3+",
                about="The cluster-wide finalized min version level for the feature.",
            ),
        ),
    ),
    field(
        "ZkMigrationReady",
        "bool",
        "3+",
        tagged="3+",
        tag=3,
        default="false",
        ignorable=True,
        about="Set by a KRaft controller if the required configurations for ZK migration are present",
    ),
)


MESSAGES = (
    REQUEST_HEADER,
    RESPONSE_HEADER,
    LEADER_AND_ISR_REQUEST,
    LEADER_AND_ISR_RESPONSE,
    STOP_REPLICA_REQUEST,
    STOP_REPLICA_RESPONSE,
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
    BROKER_REGISTRATION_REQUEST,
    BROKER_REGISTRATION_RESPONSE,
    BROKER_HEARTBEAT_REQUEST,
    BROKER_HEARTBEAT_RESPONSE,
    API_VERSIONS_REQUEST,
    API_VERSIONS_RESPONSE,
)


BEYOND_JSON = {
    "BrokerRegistrationRequest": ("0-5", ("CordonedLogDirs",)),
    "BrokerRegistrationResponse": ("0-5", ()),
    "BrokerHeartbeatRequest": ("0-2", ("CordonedLogDirs",)),
    "BrokerHeartbeatResponse": ("0-2", ()),
}


NOT_IN_SHARED = ("ApiVersionsRequest", "ApiVersionsResponse")
