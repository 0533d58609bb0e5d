from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import MetadataVersion as MV
from ctrlbatch.context.metadata_version import KAFKA_4X_LEVELS, LAST_ZK_LEVEL, MetadataLevel, metadata_level

# Kafka 3.9's declaration order, as member names (MetadataVersion.java).
KAFKA_3_9_ORDER = """
IBP_0_8_0 IBP_0_8_1 IBP_0_8_2 IBP_0_9_0 IBP_0_10_0_IV0 IBP_0_10_0_IV1 IBP_0_10_1_IV0 IBP_0_10_1_IV1
IBP_0_10_1_IV2 IBP_0_10_2_IV0 IBP_0_11_0_IV0 IBP_0_11_0_IV1 IBP_0_11_0_IV2 IBP_1_0_IV0 IBP_1_1_IV0
IBP_2_0_IV0 IBP_2_0_IV1 IBP_2_1_IV0 IBP_2_1_IV1 IBP_2_1_IV2 IBP_2_2_IV0 IBP_2_2_IV1 IBP_2_3_IV0
IBP_2_3_IV1 IBP_2_4_IV0 IBP_2_4_IV1 IBP_2_5_IV0 IBP_2_6_IV0 IBP_2_7_IV0 IBP_2_7_IV1 IBP_2_7_IV2
IBP_2_8_IV0 IBP_2_8_IV1 IBP_3_0_IV0 IBP_3_0_IV1 IBP_3_1_IV0 IBP_3_2_IV0 IBP_3_3_IV0 IBP_3_3_IV1
IBP_3_3_IV2 IBP_3_3_IV3 IBP_3_4_IV0 IBP_3_5_IV0 IBP_3_5_IV1 IBP_3_5_IV2 IBP_3_6_IV0 IBP_3_6_IV1
IBP_3_6_IV2 IBP_3_7_IV0 IBP_3_7_IV1 IBP_3_7_IV2 IBP_3_7_IV3 IBP_3_7_IV4 IBP_3_8_IV0 IBP_3_9_IV0
IBP_4_0_IV0 IBP_4_0_IV1
""".split()

versions = st.sampled_from(list(MV))


def test_there_are_57_versions_in_kafka_order() -> None:
    assert len(MV) == 57
    assert [m.name for m in MV] == KAFKA_3_9_ORDER
    assert MV.VERSIONS == tuple(MV)
    assert [m.ordinal for m in MV] == list(range(57))


def test_latest_production_and_testing() -> None:
    assert MV.LATEST_PRODUCTION is MV.IBP_3_9_IV0
    assert MV.LATEST_TESTING is MV.IBP_4_0_IV1
    assert MV.latest_production() is MV.IBP_3_9_IV0
    assert MV.latest_testing() is MV.IBP_4_0_IV1
    # The aliases are class attributes, not extra members.
    assert "LATEST_PRODUCTION" not in MV.__members__


def test_production_flag() -> None:
    assert MV.IBP_3_9_IV0.is_production()
    assert MV.IBP_0_8_0.is_production()
    assert not MV.IBP_4_0_IV0.is_production()
    assert not MV.IBP_4_0_IV1.is_production()


@pytest.mark.parametrize(
    ("member", "version", "release"),
    [
        (MV.IBP_0_8_0, "0.8.0", "0.8.0"),
        (MV.IBP_0_9_0, "0.9.0", "0.9.0"),
        (MV.IBP_0_10_0_IV0, "0.10.0-IV0", "0.10.0"),
        (MV.IBP_1_0_IV0, "1.0-IV0", "1.0"),
        (MV.IBP_2_8_IV1, "2.8-IV1", "2.8"),
        (MV.IBP_3_9_IV0, "3.9-IV0", "3.9"),
        (MV.IBP_4_0_IV1, "4.0-IV1", "4.0"),
    ],
)
def test_version_and_release_strings(member: MV, version: str, release: str) -> None:
    assert member.version == version
    assert str(member) == version
    assert member.release == release
    assert member.short_version == release


def test_feature_levels() -> None:
    assert MV.IBP_3_0_IV0.feature_level == -1
    assert MV.IBP_3_0_IV1.feature_level == 1
    assert MV.IBP_3_9_IV0.feature_level == 21
    assert MV.IBP_4_0_IV1.feature_level == 23


def test_comparisons_use_declaration_order_not_text() -> None:
    # "0.10.0" sorts before "0.9.0" as text; Kafka orders by declaration.
    assert MV.IBP_0_9_0 < MV.IBP_0_10_0_IV0
    assert MV.IBP_3_9_IV0 > MV.IBP_3_4_IV0
    assert MV.IBP_3_2_IV0 >= MV.IBP_3_2_IV0
    assert MV.IBP_3_1_IV0 <= MV.IBP_3_2_IV0
    assert MV.IBP_3_2_IV0.is_at_least(MV.IBP_3_2_IV0)
    assert not MV.IBP_3_1_IV0.is_at_least(MV.IBP_3_2_IV0)
    assert MV.IBP_3_1_IV0.is_less_than(MV.IBP_3_2_IV0)
    assert max(MV) is MV.IBP_4_0_IV1
    assert sorted([MV.IBP_2_4_IV1, MV.IBP_0_8_2, MV.IBP_2_4_IV0]) == [
        MV.IBP_0_8_2,
        MV.IBP_2_4_IV0,
        MV.IBP_2_4_IV1,
    ]


def test_comparison_with_other_types_is_refused() -> None:
    with pytest.raises(TypeError):
        _ = MV.IBP_0_8_0 < "0.9.0"  # type: ignore[operator]


@given(versions, versions)
def test_order_matches_position(a: MV, b: MV) -> None:
    position = list(MV).index
    assert (a < b) == (position(a) < position(b))
    assert (a >= b) == a.is_at_least(b) == (position(a) >= position(b))
    assert (a < b) == a.is_less_than(b)
    assert (a == b) == (a is b)


@pytest.mark.parametrize("member", list(MV))
def test_every_version_string_parses_back(member: MV) -> None:
    assert MV.from_version_string(member.version) is member


@pytest.mark.parametrize("member", list(MV))
def test_every_member_pickles_to_itself(member: MV) -> None:
    assert pickle.loads(pickle.dumps(member)) is member


# A bare release means its latest *production* sub-version (Kafka 3.9 fromVersionString).
BARE_RELEASES = {
    "0.8.0": MV.IBP_0_8_0,
    "0.8.1": MV.IBP_0_8_1,
    "0.8.2": MV.IBP_0_8_2,
    "0.9.0": MV.IBP_0_9_0,
    "0.10.0": MV.IBP_0_10_0_IV1,
    "0.10.1": MV.IBP_0_10_1_IV2,
    "0.10.2": MV.IBP_0_10_2_IV0,
    "0.11.0": MV.IBP_0_11_0_IV2,
    "1.0": MV.IBP_1_0_IV0,
    "1.1": MV.IBP_1_1_IV0,
    "2.0": MV.IBP_2_0_IV1,
    "2.1": MV.IBP_2_1_IV2,
    "2.2": MV.IBP_2_2_IV1,
    "2.3": MV.IBP_2_3_IV1,
    "2.4": MV.IBP_2_4_IV1,
    "2.5": MV.IBP_2_5_IV0,
    "2.6": MV.IBP_2_6_IV0,
    "2.7": MV.IBP_2_7_IV2,
    "2.8": MV.IBP_2_8_IV1,
    "3.0": MV.IBP_3_0_IV1,
    "3.1": MV.IBP_3_1_IV0,
    "3.2": MV.IBP_3_2_IV0,
    "3.3": MV.IBP_3_3_IV3,
    "3.4": MV.IBP_3_4_IV0,
    "3.5": MV.IBP_3_5_IV2,
    "3.6": MV.IBP_3_6_IV2,
    "3.7": MV.IBP_3_7_IV4,
    "3.8": MV.IBP_3_8_IV0,
    "3.9": MV.IBP_3_9_IV0,
}


@pytest.mark.parametrize(("text", "expected"), list(BARE_RELEASES.items()))
def test_bare_release_maps_to_latest_production_iv(text: str, expected: MV) -> None:
    assert MV.from_version_string(text) is expected


def test_every_production_release_is_covered() -> None:
    assert set(BARE_RELEASES) == {m.release for m in MV if m.is_production()}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.8.0.x", MV.IBP_0_8_0),  # only three segments count for "0." versions
        ("0.10.0.1", MV.IBP_0_10_0_IV1),
        ("0.10.0-IV0", MV.IBP_0_10_0_IV0),
        ("1.0.1", MV.IBP_1_0_IV0),  # only two segments count otherwise
        ("2.8.0", MV.IBP_2_8_IV1),
        ("3.9.0", MV.IBP_3_9_IV0),
        ("3.9.1-whatever", MV.IBP_3_9_IV0),
        ("4.0-IV0", MV.IBP_4_0_IV0),
    ],
)
def test_extra_segments_are_ignored(text: str, expected: MV) -> None:
    assert MV.from_version_string(text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3",
        "0.8",
        "4.0",  # both 4.0 versions are newer than LATEST_PRODUCTION, so the bare release is unknown
        "4.0.0",
        "3.9.",  # Java's split drops the trailing empty segment, so the whole text is the key
        "3.9-IV1",
        "2.8-iv1",
        "IBP_3_9_IV0",
        "9.9",
        " 3.9",
    ],
)
def test_invalid_strings_raise_kafkas_message(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        MV.from_version_string(text)
    assert str(raised.value) == f"Version {text} is not a valid version"


# ---- Kafka 4.x feature levels (MetadataLevel): a table beside 3.9's enum, for reading 4.x logs

LEVELS_MD = Path(__file__).resolve().parents[3] / "shared" / "reference" / "kafka-metadata-versions-4x.md"


def _reference_rows() -> list[tuple[int, str, bool]]:
    """(level, version, metadata change) of the table in kafka-metadata-versions-4x.md."""
    rows = []
    for line in LEVELS_MD.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1], cells[2] == "yes"))
    return rows


def test_levels_7_to_33_have_their_4x_names_and_metadata_change_flags() -> None:
    rows = _reference_rows()
    assert [r[0] for r in rows] == list(range(7, 34))
    assert [(lv, KAFKA_4X_LEVELS[lv].version, KAFKA_4X_LEVELS[lv].metadata_changed) for lv, _v, _c in rows] == rows


def test_levels_up_to_21_keep_their_own_3_9_member_and_later_ones_use_3_9_iv0() -> None:
    for level in range(1, LAST_ZK_LEVEL + 1):
        known = metadata_level(level)
        assert known is not None and known.request_version.feature_level == level and known.zookeeper_era
        assert known.version == known.request_version.version
    for level in range(LAST_ZK_LEVEL + 1, 34):
        known = metadata_level(level)
        assert known is not None and known.request_version is MV.IBP_3_9_IV0 and not known.zookeeper_era
    assert metadata_level(0) is None and metadata_level(34) is None and metadata_level(-1) is None


def test_the_3_9_enum_keeps_its_own_unstable_levels_22_and_23() -> None:
    """3.9's table stays exactly 3.9's (request versions must not move); the 4.x table is separate."""
    assert (MV.IBP_4_0_IV0.feature_level, MV.IBP_4_0_IV1.feature_level) == (22, 23)
    assert not MV.IBP_4_0_IV0.is_production()
    assert isinstance(KAFKA_4X_LEVELS[23], MetadataLevel) and KAFKA_4X_LEVELS[23].request_version is not MV.IBP_4_0_IV1
    assert str(KAFKA_4X_LEVELS[29]) == "4.2-IV1"
