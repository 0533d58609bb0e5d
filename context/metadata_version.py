"""Kafka 3.9's ``MetadataVersion`` (the ``inter.broker.protocol.version`` values).

Rules:
- Members are declared in Kafka's order; that order *is* the version order (``<``, ``is_at_least``).
  Each member's value is its row of Kafka's table: (release, sub-version, feature level).
- ``version`` is Kafka's ``version()``: ``release`` alone when there is no sub-version ("0.8.0"),
  otherwise ``release-IVn`` ("2.8-IV1"). ``str()`` gives the same text.
- ``from_version_string`` follows Kafka's ``fromVersionString``: only the first three dot-separated
  segments count for a string starting with "0.", only the first two otherwise (so "1.0.1" means
  "1.0"); a bare release means its latest *production* sub-version, so "4.0" is not valid in 3.9
  (both 4.0 versions are newer than ``LATEST_PRODUCTION``) while "4.0-IV1" is.
- ``LATEST_PRODUCTION`` (3.9-IV0, also 3.9's default IBP) and ``LATEST_TESTING`` (the last member)
  are class attributes set after the class is built, because an enum body cannot alias its members.
- ``MetadataLevel`` / ``metadata_level`` are the *feature levels* as Kafka 3.3 to 4.4 name them
  (kafka-metadata-versions-4x.md), for reading KRaft logs. They are a separate table because
  Kafka 3.9's enum above gives levels 22 and 23 other, unstable meanings ("4.0-IV0" was ELR in 3.9).
  Each level maps to the 3.9 member whose request versions a ZooKeeper-mode controller would use:
  its own member up to 21 (3.9-IV0), and 3.9-IV0 above (Kafka 4.0 removed ZooKeeper mode, so no
  LeaderAndIsr, UpdateMetadata or StopReplica version exists past 3.9-IV0's).
"""

from __future__ import annotations

import enum
from typing import ClassVar

import attrs

__all__ = ["KAFKA_4X_LEVELS", "LAST_ZK_LEVEL", "MetadataLevel", "MetadataVersion", "metadata_level"]


class MetadataVersion(enum.Enum):
    """An inter-broker protocol / metadata version, ordered by declaration."""

    # fmt: off
    IBP_0_8_0      = ("0.8.0", "", -1)
    IBP_0_8_1      = ("0.8.1", "", -1)
    IBP_0_8_2      = ("0.8.2", "", -1)
    IBP_0_9_0      = ("0.9.0", "", -1)
    IBP_0_10_0_IV0 = ("0.10.0", "IV0", -1)
    IBP_0_10_0_IV1 = ("0.10.0", "IV1", -1)
    IBP_0_10_1_IV0 = ("0.10.1", "IV0", -1)
    IBP_0_10_1_IV1 = ("0.10.1", "IV1", -1)
    IBP_0_10_1_IV2 = ("0.10.1", "IV2", -1)
    IBP_0_10_2_IV0 = ("0.10.2", "IV0", -1)
    IBP_0_11_0_IV0 = ("0.11.0", "IV0", -1)
    IBP_0_11_0_IV1 = ("0.11.0", "IV1", -1)
    IBP_0_11_0_IV2 = ("0.11.0", "IV2", -1)
    IBP_1_0_IV0    = ("1.0", "IV0", -1)
    IBP_1_1_IV0    = ("1.1", "IV0", -1)
    IBP_2_0_IV0    = ("2.0", "IV0", -1)
    IBP_2_0_IV1    = ("2.0", "IV1", -1)
    IBP_2_1_IV0    = ("2.1", "IV0", -1)
    IBP_2_1_IV1    = ("2.1", "IV1", -1)
    IBP_2_1_IV2    = ("2.1", "IV2", -1)
    IBP_2_2_IV0    = ("2.2", "IV0", -1)
    IBP_2_2_IV1    = ("2.2", "IV1", -1)
    IBP_2_3_IV0    = ("2.3", "IV0", -1)
    IBP_2_3_IV1    = ("2.3", "IV1", -1)
    IBP_2_4_IV0    = ("2.4", "IV0", -1)
    IBP_2_4_IV1    = ("2.4", "IV1", -1)
    IBP_2_5_IV0    = ("2.5", "IV0", -1)
    IBP_2_6_IV0    = ("2.6", "IV0", -1)
    IBP_2_7_IV0    = ("2.7", "IV0", -1)
    IBP_2_7_IV1    = ("2.7", "IV1", -1)
    IBP_2_7_IV2    = ("2.7", "IV2", -1)
    IBP_2_8_IV0    = ("2.8", "IV0", -1)
    IBP_2_8_IV1    = ("2.8", "IV1", -1)
    IBP_3_0_IV0    = ("3.0", "IV0", -1)
    IBP_3_0_IV1    = ("3.0", "IV1", 1)
    IBP_3_1_IV0    = ("3.1", "IV0", 2)
    IBP_3_2_IV0    = ("3.2", "IV0", 3)
    IBP_3_3_IV0    = ("3.3", "IV0", 4)
    IBP_3_3_IV1    = ("3.3", "IV1", 5)
    IBP_3_3_IV2    = ("3.3", "IV2", 6)
    IBP_3_3_IV3    = ("3.3", "IV3", 7)
    IBP_3_4_IV0    = ("3.4", "IV0", 8)
    IBP_3_5_IV0    = ("3.5", "IV0", 9)
    IBP_3_5_IV1    = ("3.5", "IV1", 10)
    IBP_3_5_IV2    = ("3.5", "IV2", 11)
    IBP_3_6_IV0    = ("3.6", "IV0", 12)
    IBP_3_6_IV1    = ("3.6", "IV1", 13)
    IBP_3_6_IV2    = ("3.6", "IV2", 14)
    IBP_3_7_IV0    = ("3.7", "IV0", 15)
    IBP_3_7_IV1    = ("3.7", "IV1", 16)
    IBP_3_7_IV2    = ("3.7", "IV2", 17)
    IBP_3_7_IV3    = ("3.7", "IV3", 18)
    IBP_3_7_IV4    = ("3.7", "IV4", 19)
    IBP_3_8_IV0    = ("3.8", "IV0", 20)
    IBP_3_9_IV0    = ("3.9", "IV0", 21)
    IBP_4_0_IV0    = ("4.0", "IV0", 22)
    IBP_4_0_IV1    = ("4.0", "IV1", 23)
    # fmt: on

    LATEST_PRODUCTION: ClassVar[MetadataVersion]
    LATEST_TESTING: ClassVar[MetadataVersion]
    VERSIONS: ClassVar[tuple[MetadataVersion, ...]]

    ordinal: int
    release: str
    sub_version: str
    feature_level: int
    version: str

    def __init__(self, release: str, sub_version: str, feature_level: int) -> None:
        # Members are built in declaration order, so the count so far is this member's position.
        self.ordinal = len(type(self)._member_names_)
        self.release = release
        self.sub_version = sub_version
        self.feature_level = feature_level
        self.version = f"{release}-{sub_version}" if sub_version else release

    def __str__(self) -> str:
        return self.version

    @property
    def short_version(self) -> str:
        """Kafka's ``shortVersion()``: the release alone."""
        return self.release

    def is_at_least(self, other: MetadataVersion) -> bool:
        return self.ordinal >= other.ordinal

    def is_less_than(self, other: MetadataVersion) -> bool:
        return self.ordinal < other.ordinal

    def is_production(self) -> bool:
        """Whether this version may be configured in production (not newer than LATEST_PRODUCTION)."""
        return self.ordinal <= MetadataVersion.LATEST_PRODUCTION.ordinal

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal < other.ordinal

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal <= other.ordinal

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal > other.ordinal

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal >= other.ordinal

    @classmethod
    def latest_production(cls) -> MetadataVersion:
        return cls.LATEST_PRODUCTION

    @classmethod
    def latest_testing(cls) -> MetadataVersion:
        return cls.LATEST_TESTING

    @classmethod
    def from_version_string(cls, version_string: str) -> MetadataVersion:
        """Parse an ``inter.broker.protocol.version`` value; raises ``ValueError`` like Kafka's IAE."""
        segments = _java_split_on_dots(version_string)
        wanted = 3 if version_string.startswith("0.") else 2
        key = version_string if wanted >= len(segments) else ".".join(segments[:wanted])
        found = _BY_VERSION_STRING.get(key)
        if found is None:
            raise ValueError(f"Version {version_string} is not a valid version")
        return found


def _java_split_on_dots(text: str) -> list[str]:
    """Java's ``String.split("\\.")``: like Python's split, but trailing empty strings are dropped."""
    segments = text.split(".")
    while segments and not segments[-1]:
        segments.pop()
    return segments


MetadataVersion.VERSIONS = tuple(MetadataVersion)
MetadataVersion.LATEST_PRODUCTION = MetadataVersion.IBP_3_9_IV0
MetadataVersion.LATEST_TESTING = MetadataVersion.VERSIONS[-1]


def _version_string_table() -> dict[str, MetadataVersion]:
    """Every full version string, then each release mapped to its latest production sub-version."""
    table = {member.version: member for member in MetadataVersion.VERSIONS}
    table.update({member.release: member for member in MetadataVersion.VERSIONS if member.is_production()})
    return table


_BY_VERSION_STRING: dict[str, MetadataVersion] = _version_string_table()


LAST_ZK_LEVEL = 21  # 3.9-IV0: the last level with a ZooKeeper mode (Kafka 4.0 removed it)


@attrs.frozen(slots=True)
class MetadataLevel:
    """A metadata.version feature level as Kafka 4.x names it, and the 3.9 ``MetadataVersion``
    whose request versions stand for it (``request_version``: 3.9-IV0 above level 21)."""

    feature_level: int
    version: str
    metadata_changed: bool
    request_version: MetadataVersion

    def __str__(self) -> str:
        return self.version

    @property
    def zookeeper_era(self) -> bool:
        """Whether a ZooKeeper-mode Kafka ever ran at this level (levels up to 21, 3.9-IV0)."""
        return self.feature_level <= LAST_ZK_LEVEL


# (level, Kafka 4.x name, didMetadataChange) for levels 22-33: MetadataVersion.java at apache/kafka
# 4425e970 (kafka-metadata-versions-4x.md). Levels 1-21 keep 3.9's names (the same in 4.x).
_LEVELS_4X: tuple[tuple[int, str, bool], ...] = (
    (22, "4.0-IV0", False),
    (23, "4.0-IV1", True),
    (24, "4.0-IV2", False),
    (25, "4.0-IV3", False),
    (26, "4.1-IV0", False),
    (27, "4.1-IV1", False),
    (28, "4.2-IV0", False),
    (29, "4.2-IV1", False),
    (30, "4.3-IV0", True),
    (31, "4.4-IV0", False),
    (32, "4.4-IV1", True),
    (33, "4.4-IV2", True),
)
# didMetadataChange of levels 1-21 (MetadataVersion.java; the same in 3.9 and 4.x).
_CHANGED_3X = frozenset({1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 17})


def _levels() -> dict[int, MetadataLevel]:
    table = {
        mv.feature_level: MetadataLevel(mv.feature_level, mv.version, mv.feature_level in _CHANGED_3X, mv)
        for mv in MetadataVersion.VERSIONS
        if 0 < mv.feature_level <= LAST_ZK_LEVEL
    }
    last_zk = table[LAST_ZK_LEVEL].request_version
    table.update({lv: MetadataLevel(lv, name, changed, last_zk) for lv, name, changed in _LEVELS_4X})
    return table


KAFKA_4X_LEVELS: dict[int, MetadataLevel] = _levels()


def metadata_level(level: int) -> MetadataLevel | None:
    """The feature level ``level`` as Kafka 4.x knows it (1-33), or None for a level it does not."""
    return KAFKA_4X_LEVELS.get(level)
