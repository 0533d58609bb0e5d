"""``ControllerConfig``: the KafkaConfig settings the ZooKeeper-mode controller reads.

Rules:
- Names and defaults are Kafka 3.9's (server/src/main/java/org/apache/kafka/server/config/
  ReplicationConfigs.java:112-131, 148-149, 166-176; ServerConfigs.java:80-81, 161):
  ``auto.leader.rebalance.enable`` true, ``leader.imbalance.per.broker.percentage`` 10 (an INT
  with no validator), ``leader.imbalance.check.interval.seconds`` 300 (a LONG, ``atLeast(1)``),
  ``delete.topic.enable`` true, ``unclean.leader.election.enable`` false (the broker default a
  topic config overrides, LogConfig.java:180), ``inter.broker.protocol.version`` 3.9-IV0.
- The capability flags are MetadataVersion's (server-common/.../MetadataVersion.java:295-317):
  feature versioning from 2.7-IV0, AlterPartition from 2.7-IV2, topic ids from 2.8-IV0
  (``KafkaConfig.usesTopicId``), leader recovery from 3.2-IV0.
- Every field is checked when the value is built; a bad one raises TypeError/ValueError naming
  the Kafka property and the value. ``from_properties`` takes Kafka's property names (strings or
  typed values) and refuses names it does not know, so a typo is not silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ctrlbatch.context import MetadataVersion

__all__ = ["ControllerConfig"]

# Kafka property name -> attribute name.
PROPERTY_NAMES: dict[str, str] = {
    "broker.id": "broker_id",
    "inter.broker.protocol.version": "inter_broker_protocol_version",
    "auto.leader.rebalance.enable": "auto_leader_rebalance_enable",
    "leader.imbalance.per.broker.percentage": "leader_imbalance_per_broker_percentage",
    "leader.imbalance.check.interval.seconds": "leader_imbalance_check_interval_seconds",
    "delete.topic.enable": "delete_topic_enable",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
}
_ATTRIBUTE_PROPERTY = {attr: prop for prop, attr in PROPERTY_NAMES.items()}


def _to_metadata_version(value: MetadataVersion | str) -> MetadataVersion:
    if isinstance(value, MetadataVersion):
        return value
    if isinstance(value, str):
        try:
            return MetadataVersion.from_version_string(value)
        except ValueError as e:
            raise ValueError(f"inter.broker.protocol.version: {e}") from None
    raise TypeError(
        f"inter.broker.protocol.version must be a MetadataVersion or a version string such as '3.9', "
        f"not {type(value).__name__} {value!r:.80}"
    )


def _check_int(minimum: int | None) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        name = _ATTRIBUTE_PROPERTY[attribute.name]
        if type(value) is not int:
            raise TypeError(f"{name} must be an int, not {type(value).__name__} {value!r:.80}")
        if minimum is not None and value < minimum:
            raise ValueError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")

    return check


def _check_bool(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not bool:
        name = _ATTRIBUTE_PROPERTY[attribute.name]
        raise TypeError(f"{name} must be a bool, not {type(value).__name__} {value!r:.80}")


@attrs.frozen
class ControllerConfig:
    """What KafkaController reads from KafkaConfig (see the module rules)."""

    broker_id: int = attrs.field(validator=_check_int(0))
    inter_broker_protocol_version: MetadataVersion = attrs.field(
        default=MetadataVersion.IBP_3_9_IV0, converter=_to_metadata_version
    )
    auto_leader_rebalance_enable: bool = attrs.field(default=True, validator=_check_bool)
    leader_imbalance_per_broker_percentage: int = attrs.field(default=10, validator=_check_int(None))
    leader_imbalance_check_interval_seconds: int = attrs.field(default=300, validator=_check_int(1))
    delete_topic_enable: bool = attrs.field(default=True, validator=_check_bool)
    unclean_leader_election_enable: bool = attrs.field(default=False, validator=_check_bool)

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> ControllerConfig:
        """Build from Kafka property names; string values are parsed as Kafka parses them."""
        if not isinstance(properties, Mapping):
            raise TypeError(f"properties must be a mapping of Kafka property names, not {type(properties).__name__}")
        kwargs: dict[str, Any] = {}
        for name, value in properties.items():
            attr = PROPERTY_NAMES.get(name) if isinstance(name, str) else None
            if attr is None:
                raise ValueError(f"unknown controller property {name!r:.80}; known: {', '.join(sorted(PROPERTY_NAMES))}")
            kwargs[attr] = _parse(name, value) if isinstance(value, str) and attr != "inter_broker_protocol_version" else value
        if "broker_id" not in kwargs:
            raise ValueError("broker.id is required")
        return cls(**kwargs)

    @property
    def is_feature_versioning_supported(self) -> bool:
        return self.inter_broker_protocol_version.is_at_least(MetadataVersion.IBP_2_7_IV0)

    @property
    def is_alter_partition_supported(self) -> bool:
        return self.inter_broker_protocol_version.is_at_least(MetadataVersion.IBP_2_7_IV2)

    @property
    def uses_topic_id(self) -> bool:
        return self.inter_broker_protocol_version.is_at_least(MetadataVersion.IBP_2_8_IV0)

    @property
    def is_leader_recovery_supported(self) -> bool:
        return self.inter_broker_protocol_version.is_at_least(MetadataVersion.IBP_3_2_IV0)

    @property
    def leader_imbalance_check_interval_ms(self) -> int:
        return self.leader_imbalance_check_interval_seconds * 1000


def _parse(name: str, text: str) -> int | bool:
    """A string value as Kafka's ConfigDef parses an INT/LONG or a BOOLEAN."""
    attr = PROPERTY_NAMES[name]
    if attr.endswith("_enable"):
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ValueError(f"Invalid value {text} for configuration {name}: Expected value to be either true or false")
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"Invalid value {text} for configuration {name}: Not a number of type INT") from None
