"""The project's own description of the KRaft metadata records and control records: fields,
types, versions, nullable/tagged flags and defaults, one declaration per record schema.

Generated from Kafka's JSON specs by `python -m ctrlbatch.replay.schema.metadata_specgen`; the JSON
files are the truth and tests/replay/test_metadata_catalog.py compares this module with them
field by field. RECORDS holds the metadata records in apiKey order; CONTROL_RECORDS maps a
control record type id to (name, schema). RegisterBrokerRecord 0-4 and
BrokerRegistrationChangeRecord 0-3 go past their JSON with a tagged CordonedLogDirs
(metadata_specgen.PAST_THE_JSON).
"""

# ruff: noqa: E501, I001
from ctrlbatch.requests.spec import field, message, struct


REGISTER_BROKER_RECORD = message(
    "RegisterBrokerRecord",
    "metadata",
    0,
    "0-4",
    "0+",
    field("BrokerId", "int32", "0+", about="The broker id."),
    field(
        "IsMigratingZkBroker",
        "bool",
        "2+",
        default="false",
        about="True if the broker is a ZK broker in migration mode. Otherwise, false",
    ),
    field("IncarnationId", "uuid", "0+", about="The incarnation ID of the broker process"),
    field("BrokerEpoch", "int64", "0+", about="The broker epoch assigned by the controller."),
    field(
        "EndPoints",
        "[]BrokerEndpoint",
        "0+",
        about="The endpoints that can be used to communicate with this broker.",
        struct=struct(
            "BrokerEndpoint",
            "0+",
            field("Name", "string", "0+", about="The name of the endpoint."),
            field("Host", "string", "0+", about="The hostname."),
            field("Port", "uint16", "0+", about="The port."),
            field("SecurityProtocol", "int16", "0+", about="The security protocol."),
        ),
    ),
    field(
        "Features",
        "[]BrokerFeature",
        "0+",
        about="The features on this broker",
        struct=struct(
            "BrokerFeature",
            "0+",
            field("Name", "string", "0+", about="The feature name."),
            field("MinSupportedVersion", "int16", "0+", about="The minimum supported feature level."),
            field("MaxSupportedVersion", "int16", "0+", about="The maximum supported feature level."),
        ),
    ),
    field("Rack", "string", "0+", nullable="0+", about="The broker rack."),
    field("Fenced", "bool", "0+", default="true", about="True if the broker is fenced."),
    field(
        "InControlledShutdown",
        "bool",
        "1+",
        default="false",
        about="True if the broker is in controlled shutdown.",
    ),
    field(
        "LogDirs",
        "[]uuid",
        "3+",
        tagged="3+",
        tag=0,
        about="Log directories configured in this broker which are available.",
    ),
    field(
        "CordonedLogDirs",
        "[]uuid",
        "4+",
        nullable="4+",
        tagged="4+",
        tag=1,
        default="null",
        about="Log directories that are cordoned (KIP-1066; null when not known).",
    ),
)


UNREGISTER_BROKER_RECORD = message(
    "UnregisterBrokerRecord",
    "metadata",
    1,
    "0",
    "0+",
    field("BrokerId", "int32", "0+", about="The broker id."),
    field("BrokerEpoch", "int64", "0+", about="The broker epoch."),
)


TOPIC_RECORD = message(
    "TopicRecord",
    "metadata",
    2,
    "0",
    "0+",
    field("Name", "string", "0+", about="The topic name."),
    field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
)


PARTITION_RECORD = message(
    "PartitionRecord",
    "metadata",
    3,
    "0-2",
    "0+",
    field("PartitionId", "int32", "0+", default="-1", about="The partition id."),
    field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
    field("Replicas", "[]int32", "0+", about="The replicas of this partition, sorted by preferred order."),
    field("Isr", "[]int32", "0+", about="The in-sync replicas of this partition"),
    field("RemovingReplicas", "[]int32", "0+", about="The replicas that we are in the process of removing."),
    field("AddingReplicas", "[]int32", "0+", about="The replicas that we are in the process of adding."),
    field("Leader", "int32", "0+", default="-1", about="The lead replica, or -1 if there is no leader."),
    field(
        "LeaderRecoveryState",
        "int8",
        "0+",
        tagged="0+",
        tag=0,
        default="0",
        about="1 if the partition is recovering from an unclean leader election; 0 otherwise.",
    ),
    field("LeaderEpoch", "int32", "0+", default="-1", about="The epoch of the partition leader."),
    field(
        "PartitionEpoch",
        "int32",
        "0+",
        default="-1",
        about="An epoch that gets incremented each time we change anything in the partition.",
    ),
    field(
        "Directories",
        "[]uuid",
        "1+",
        about="The log directory hosting each replica, sorted in the same exact order as the Replicas field.",
    ),
    field(
        "EligibleLeaderReplicas",
        "[]int32",
        "2+",
        nullable="2+",
        tagged="2+",
        tag=1,
        default="null",
        about="The eligible leader replicas of this partition.",
    ),
    field(
        "LastKnownElr",
        "[]int32",
        "2+",
        nullable="2+",
        tagged="2+",
        tag=2,
        default="null",
        about="The last known eligible leader replicas of this partition.",
    ),
)


CONFIG_RECORD = message(
    "ConfigRecord",
    "metadata",
    4,
    "0",
    "0+",
    field("ResourceType", "int8", "0+", about="The type of resource this configuration applies to."),
    field("ResourceName", "string", "0+", about="The name of the resource this configuration applies to."),
    field("Name", "string", "0+", about="The name of the configuration key."),
    field(
        "Value",
        "string",
        "0+",
        nullable="0+",
        about="The value of the configuration, or null if the it should be deleted.",
    ),
)


PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord",
    "metadata",
    5,
    "0-2",
    "0+",
    field("PartitionId", "int32", "0+", default="-1", about="The partition id."),
    field("TopicId", "uuid", "0+", about="The unique ID of this topic."),
    field(
        "Isr",
        "[]int32",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=0,
        default="null",
        about="null if the ISR didn't change; the new in-sync replicas otherwise.",
    ),
    field(
        "Leader",
        "int32",
        "0+",
        tagged="0+",
        tag=1,
        default="-2",
        about="-1 if there is now no leader; -2 if the leader didn't change; the new leader otherwise.",
    ),
    field(
        "Replicas",
        "[]int32",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=2,
        default="null",
        about="null if the replicas didn't change; the new replicas otherwise.",
    ),
    field(
        "RemovingReplicas",
        "[]int32",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=3,
        default="null",
        about="null if the removing replicas didn't change; the new removing replicas otherwise.",
    ),
    field(
        "AddingReplicas",
        "[]int32",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=4,
        default="null",
        about="null if the adding replicas didn't change; the new adding replicas otherwise.",
    ),
    field(
        "LeaderRecoveryState",
        "int8",
        "0+",
        tagged="0+",
        tag=5,
        default="-1",
        about="-1 if it didn't change; 0 if the leader was elected from the ISR or recovered from an unclean election; 1 if the leader that was elected using unclean leader election and it is still recovering.",
    ),
    field(
        "Directories",
        "[]uuid",
        "1+",
        nullable="1+",
        tagged="1+",
        tag=8,
        default="null",
        about="null if the log dirs didn't change; the new log directory for each replica otherwise.",
    ),
    field(
        "EligibleLeaderReplicas",
        "[]int32",
        "2+",
        nullable="2+",
        tagged="2+",
        tag=6,
        default="null",
        about="null if the ELR didn't change; the new eligible leader replicas otherwise.",
    ),
    field(
        "LastKnownElr",
        "[]int32",
        "2+",
        nullable="2+",
        tagged="2+",
        tag=7,
        default="null",
        about="null if the LastKnownElr didn't change; the last known eligible leader replicas otherwise.",
    ),
)


FENCE_BROKER_RECORD = message(
    "FenceBrokerRecord",
    "metadata",
    7,
    "0",
    "0+",
    field("Id", "int32", "0+", about="The broker ID to fence. It will be removed from all ISRs."),
    field("Epoch", "int64", "0+", about="The epoch of the broker to fence."),
)


UNFENCE_BROKER_RECORD = message(
    "UnfenceBrokerRecord",
    "metadata",
    8,
    "0",
    "0+",
    field("Id", "int32", "0+", about="The broker ID to unfence."),
    field("Epoch", "int64", "0+", about="The epoch of the broker to unfence."),
)


REMOVE_TOPIC_RECORD = message(
    "RemoveTopicRecord",
    "metadata",
    9,
    "0",
    "0+",
    field(
        "TopicId",
        "uuid",
        "0+",
        about="The topic to remove. All associated partitions will be removed as well.",
    ),
)


DELEGATION_TOKEN_RECORD = message(
    "DelegationTokenRecord",
    "metadata",
    10,
    "0",
    "0+",
    field("Owner", "string", "0+", about="The delegation token owner."),
    field("Requester", "string", "0+", about="The delegation token requester."),
    field("Renewers", "[]string", "0+", about="The principals which can renew this token."),
    field("IssueTimestamp", "int64", "0+", about="The time at which this timestamp was issued."),
    field("MaxTimestamp", "int64", "0+", about="The time at which this token cannot be renewed any more."),
    field("ExpirationTimestamp", "int64", "0+", about="The next time at which this token must be renewed."),
    field("TokenId", "string", "0+", about="The token id."),
)


USER_SCRAM_CREDENTIAL_RECORD = message(
    "UserScramCredentialRecord",
    "metadata",
    11,
    "0",
    "0+",
    field("Name", "string", "0+", about="The user name."),
    field("Mechanism", "int8", "0+", about="The SCRAM mechanism."),
    field("Salt", "bytes", "0+", about="A random salt generated by the client."),
    field("StoredKey", "bytes", "0+", about="The key the Server uses to authenticate the Client."),
    field("ServerKey", "bytes", "0+", about="The key the Client uses to validate the Servers identity."),
    field("Iterations", "int32", "0+", about="The number of iterations used in the SCRAM credential."),
)


FEATURE_LEVEL_RECORD = message(
    "FeatureLevelRecord",
    "metadata",
    12,
    "0",
    "0+",
    field("Name", "string", "0+", about="The feature name."),
    field(
        "FeatureLevel",
        "int16",
        "0+",
        about="The current finalized feature level of this feature for the cluster, a value of 0 means feature not supported.",
    ),
)


CLIENT_QUOTA_RECORD = message(
    "ClientQuotaRecord",
    "metadata",
    14,
    "0",
    "0+",
    field(
        "Entity",
        "[]EntityData",
        "0+",
        about="The quota entity to alter.",
        struct=struct(
            "EntityData",
            "0+",
            field("EntityType", "string", "0+", about="The entity type."),
            field(
                "EntityName",
                "string",
                "0+",
                nullable="0+",
                about="The name of the entity, or null if the default.",
            ),
        ),
    ),
    field("Key", "string", "0+", about="The quota configuration key."),
    field(
        "Value", "float64", "0+", about="The value to set, otherwise ignored if the value is to be removed."
    ),
    field(
        "Remove",
        "bool",
        "0+",
        about="Whether the quota configuration value should be removed, otherwise set.",
    ),
)


PRODUCER_IDS_RECORD = message(
    "ProducerIdsRecord",
    "metadata",
    15,
    "0",
    "0+",
    field("BrokerId", "int32", "0+", about="The ID of the requesting broker"),
    field("BrokerEpoch", "int64", "0+", default="-1", about="The epoch of the requesting broker"),
    field(
        "NextProducerId",
        "int64",
        "0+",
        about="The next producerId that will be assigned (i.e. the first producerId in the next assigned block)",
    ),
)


BROKER_REGISTRATION_CHANGE_RECORD = message(
    "BrokerRegistrationChangeRecord",
    "metadata",
    17,
    "0-3",
    "0+",
    field("BrokerId", "int32", "0+", about="The broker id."),
    field("BrokerEpoch", "int64", "0+", about="The broker epoch assigned by the controller."),
    field(
        "Fenced",
        "int8",
        "0+",
        tagged="0+",
        tag=0,
        about="-1 if the broker has been unfenced, 0 if no change, 1 if the broker has been fenced.",
    ),
    field(
        "InControlledShutdown",
        "int8",
        "1+",
        tagged="1+",
        tag=1,
        about="0 if no change, 1 if the broker is in controlled shutdown.",
    ),
    field(
        "LogDirs",
        "[]uuid",
        "2+",
        tagged="2+",
        tag=2,
        about="Log directories configured in this broker which are available.",
    ),
    field(
        "CordonedLogDirs",
        "[]uuid",
        "3+",
        nullable="3+",
        tagged="3+",
        tag=3,
        default="null",
        about="null if the cordoned log directories did not change; the cordoned log directories otherwise.",
    ),
)


ACCESS_CONTROL_ENTRY_RECORD = message(
    "AccessControlEntryRecord",
    "metadata",
    18,
    "0",
    "0+",
    field("Id", "uuid", "0+", about="The unique ID of this ACL."),
    field("ResourceType", "int8", "0+", about="The resource type."),
    field("ResourceName", "string", "0+", about="The resource name."),
    field("PatternType", "int8", "0+", about="The resource name pattern type."),
    field("Principal", "string", "0+", about="The principal name."),
    field("Host", "string", "0+", about="The host name."),
    field("Operation", "int8", "0+", about="The AclOperation."),
    field("PermissionType", "int8", "0+", about="The AclPermissionType."),
)


REMOVE_ACCESS_CONTROL_ENTRY_RECORD = message(
    "RemoveAccessControlEntryRecord",
    "metadata",
    19,
    "0",
    "0+",
    field("Id", "uuid", "0+", about="The ID of the AccessControlEntry to remove."),
)


NO_OP_RECORD = message(
    "NoOpRecord",
    "metadata",
    20,
    "0",
    "0+",
)


ZK_MIGRATION_STATE_RECORD = message(
    "ZkMigrationStateRecord",
    "metadata",
    21,
    "0",
    "0+",
    field("ZkMigrationState", "int8", "0+", about="One of the possible migration states."),
)


REMOVE_USER_SCRAM_CREDENTIAL_RECORD = message(
    "RemoveUserScramCredentialRecord",
    "metadata",
    22,
    "0",
    "0+",
    field("Name", "string", "0+", about="The user name."),
    field("Mechanism", "int8", "0+", about="The SCRAM mechanism."),
)


BEGIN_TRANSACTION_RECORD = message(
    "BeginTransactionRecord",
    "metadata",
    23,
    "0",
    "0+",
    field(
        "Name",
        "string",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=0,
        default="null",
        about="An optional textual description of this transaction.",
    ),
)


END_TRANSACTION_RECORD = message(
    "EndTransactionRecord",
    "metadata",
    24,
    "0",
    "0+",
)


ABORT_TRANSACTION_RECORD = message(
    "AbortTransactionRecord",
    "metadata",
    25,
    "0",
    "0+",
    field(
        "Reason",
        "string",
        "0+",
        nullable="0+",
        tagged="0+",
        tag=0,
        default="null",
        about="An optional textual description of why the transaction was aborted.",
    ),
)


REMOVE_DELEGATION_TOKEN_RECORD = message(
    "RemoveDelegationTokenRecord",
    "metadata",
    26,
    "0",
    "0+",
    field("TokenId", "string", "0+", about="The tokenID to remove."),
)


REGISTER_CONTROLLER_RECORD = message(
    "RegisterControllerRecord",
    "metadata",
    27,
    "0",
    "0+",
    field("ControllerId", "int32", "0+", about="The controller id."),
    field("IncarnationId", "uuid", "0+", about="The incarnation ID of the controller process"),
    field(
        "ZkMigrationReady",
        "bool",
        "0+",
        about="Set if the required configurations for ZK migration are present.",
    ),
    field(
        "EndPoints",
        "[]ControllerEndpoint",
        "0+",
        about="The endpoints that can be used to communicate with this controller.",
        struct=struct(
            "ControllerEndpoint",
            "0+",
            field("Name", "string", "0+", about="The name of the endpoint."),
            field("Host", "string", "0+", about="The hostname."),
            field("Port", "uint16", "0+", about="The port."),
            field("SecurityProtocol", "int16", "0+", about="The security protocol."),
        ),
    ),
    field(
        "Features",
        "[]ControllerFeature",
        "0+",
        about="The features on this controller",
        struct=struct(
            "ControllerFeature",
            "0+",
            field("Name", "string", "0+", about="The feature name."),
            field("MinSupportedVersion", "int16", "0+", about="The minimum supported feature level."),
            field("MaxSupportedVersion", "int16", "0+", about="The maximum supported feature level."),
        ),
    ),
)


CLEAR_ELR_RECORD = message(
    "ClearElrRecord",
    "metadata",
    28,
    "0",
    "0+",
    field(
        "TopicName",
        "string",
        "0+",
        about="The name of the topic to clear ELRs for, or empty if all ELRs should be cleared.",
    ),
)


UNREGISTER_CONTROLLER_RECORD = message(
    "UnregisterControllerRecord",
    "metadata",
    29,
    "0",
    "0+",
    field("ControllerId", "int32", "0+", about="The controller id."),
)


_VOTER = struct(
    "Voter",
    "0+",
    field("VoterId", "int32", "0+", about="The ID of the voter."),
    field("VoterDirectoryId", "uuid", "1+", about="The directory id of the voter."),
)


LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage",
    "data",
    None,
    "0-1",
    "0+",
    field("Version", "int16", "0+", about="The version of the leader change message."),
    field("LeaderId", "int32", "0+", about="The ID of the newly elected leader."),
    field("Voters", "[]Voter", "0+", about="The set of voters in the quorum for this epoch.", struct=_VOTER),
    field(
        "GrantingVoters",
        "[]Voter",
        "0+",
        about="The voters who voted for the leader at the time of election.",
        struct=_VOTER,
    ),
)


SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord",
    "data",
    None,
    "0",
    "0+",
    field("Version", "int16", "0+", about="The version of the snapshot header record."),
    field(
        "LastContainedLogTimestamp",
        "int64",
        "0+",
        about="The append time of the last record from the log contained in this snapshot.",
    ),
)


SNAPSHOT_FOOTER_RECORD = message(
    "SnapshotFooterRecord",
    "data",
    None,
    "0",
    "0+",
    field("Version", "int16", "0+", about="The version of the snapshot footer record."),
)


K_RAFT_VERSION_RECORD = message(
    "KRaftVersionRecord",
    "data",
    None,
    "0",
    "0+",
    field("Version", "int16", "0+", about="The version of the kraft version record."),
    field("KRaftVersion", "int16", "0+", about="The kraft protocol version."),
)


VOTERS_RECORD = message(
    "VotersRecord",
    "data",
    None,
    "0",
    "0+",
    field("Version", "int16", "0+", about="The version of the voters record."),
    field(
        "Voters",
        "[]Voter",
        "0+",
        about="The set of voters in the quorum for this epoch.",
        struct=struct(
            "Voter",
            "0+",
            field("VoterId", "int32", "0+", about="The replica id of the voter in the topic partition."),
            field(
                "VoterDirectoryId",
                "uuid",
                "0+",
                about="The directory id of the voter in the topic partition.",
            ),
            field(
                "Endpoints",
                "[]Endpoint",
                "0+",
                about="The endpoint that can be used to communicate with the voter.",
                struct=struct(
                    "Endpoint",
                    "0+",
                    field("Name", "string", "0+", about="The name of the endpoint."),
                    field("Host", "string", "0+", about="The hostname."),
                    field("Port", "uint16", "0+", about="The port."),
                ),
            ),
            field(
                "KRaftVersionFeature",
                "KRaftVersionFeature",
                "0+",
                about="The range of versions of the protocol that the replica supports.",
                struct=struct(
                    "KRaftVersionFeature",
                    "0+",
                    field(
                        "MinSupportedVersion",
                        "int16",
                        "0+",
                        about="The minimum supported KRaft protocol version.",
                    ),
                    field(
                        "MaxSupportedVersion",
                        "int16",
                        "0+",
                        about="The maximum supported KRaft protocol version.",
                    ),
                ),
            ),
        ),
    ),
)


RECORDS = (
    REGISTER_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    PARTITION_RECORD,
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    FENCE_BROKER_RECORD,
    UNFENCE_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    DELEGATION_TOKEN_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    FEATURE_LEVEL_RECORD,
    CLIENT_QUOTA_RECORD,
    PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD,
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    NO_OP_RECORD,
    ZK_MIGRATION_STATE_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD,
    REMOVE_DELEGATION_TOKEN_RECORD,
    REGISTER_CONTROLLER_RECORD,
    CLEAR_ELR_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
)


CONTROL_RECORDS = {
    2: ("LEADER_CHANGE", LEADER_CHANGE_MESSAGE),
    3: ("SNAPSHOT_HEADER", SNAPSHOT_HEADER_RECORD),
    4: ("SNAPSHOT_FOOTER", SNAPSHOT_FOOTER_RECORD),
    5: ("KRAFT_VERSION", K_RAFT_VERSION_RECORD),
    6: ("KRAFT_VOTERS", VOTERS_RECORD),
}
