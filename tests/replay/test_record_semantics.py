"""One record-semantics table: every record type the image replays (image.REPLAYED_TYPES, its
dispatch table) is either composed by the Spark plan's net effect (net_effect.NET_STEPS) or
planned serially on purpose (net_effect.SERIAL_TYPES, with the reason), never neither, never
both; and every type of the record catalog is replayed, passed over, or unknown to both alike.
A record type the image learns and net_effect does not would make every Spark run of a history
holding it plan serially; net_effect refuses to import then (semantics_mismatch)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.image import image, net_effect
from ctrlbatch.replay.image.net_effect import NET_STEPS, SERIAL_TYPES, NotComposable, semantics_mismatch
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.schema.metadata_classes import ClearElrRecord

REAL = (image.REPLAYED_TYPES, NET_STEPS.keys(), SERIAL_TYPES.keys(), image.IGNORED_TYPES | image.TRANSACTION_TYPES)


def test_the_real_tables_agree() -> None:
    assert semantics_mismatch(*REAL) == []


def test_clear_elr_is_the_one_deliberately_serial_type() -> None:
    assert dict(SERIAL_TYPES).keys() == {rec.CLEAR_ELR_RECORD}
    assert "depend on the base" in SERIAL_TYPES[rec.CLEAR_ELR_RECORD]


def test_every_catalog_record_type_is_replayed_or_passed_over() -> None:
    catalog_types = set(rec.RECORD_TYPE_NAMES)  # the catalog's types (test_metadata_catalog checks them)
    passed_over = image.IGNORED_TYPES | image.TRANSACTION_TYPES
    assert image.REPLAYED_TYPES.isdisjoint(passed_over)
    unclassified = sorted(rec.RECORD_TYPE_NAMES.get(t, str(t)) for t in catalog_types
                          - image.REPLAYED_TYPES - passed_over)
    assert unclassified == []


@given(st.sampled_from(sorted(NET_STEPS)))
def test_a_type_dropped_from_the_net_effect_is_named(dropped: int) -> None:
    composed = NET_STEPS.keys() - {dropped}
    problems = semantics_mismatch(image.REPLAYED_TYPES, composed, SERIAL_TYPES.keys(), REAL[3])
    assert problems == [f"{rec.RECORD_TYPE_NAMES[dropped]} ({dropped}): replayed by the image, "
                        "neither composed by net_effect nor planned serially"]


@given(st.sampled_from(sorted(image.REPLAYED_TYPES)))
def test_a_type_the_image_stops_replaying_is_named(dropped: int) -> None:
    problems = semantics_mismatch(image.REPLAYED_TYPES - {dropped}, *REAL[1:])
    assert len(problems) == 1 and problems[0].startswith(f"{rec.RECORD_TYPE_NAMES[dropped]} ({dropped}): ")


def test_a_type_both_composed_and_serial_is_named() -> None:
    problems = semantics_mismatch(image.REPLAYED_TYPES, NET_STEPS.keys() | {rec.CLEAR_ELR_RECORD},
                                  SERIAL_TYPES.keys(), REAL[3])
    assert problems == [f"CLEAR_ELR_RECORD ({rec.CLEAR_ELR_RECORD}): both composed and planned serially"]


def test_a_passed_over_type_the_net_effect_composes_is_named() -> None:
    problems = semantics_mismatch(image.REPLAYED_TYPES, NET_STEPS.keys() | {rec.CONFIG_RECORD},
                                  SERIAL_TYPES.keys(), REAL[3])
    assert problems == [f"CONFIG_RECORD ({rec.CONFIG_RECORD}): composed by net_effect, not replayed by the image (passed over)"]


def test_the_serial_type_gives_the_summary_its_reason() -> None:
    """A ClearElrRecord in a range raises NotComposable, which the plan reports as its reason."""
    builder = net_effect.NetBuilder()
    record = rec.MetadataRecord(0, rec.CLEAR_ELR_RECORD, 0, ClearElrRecord(topic_name=""))
    with pytest.raises(NotComposable, match=r"record type \d+ \(CLEAR_ELR_RECORD\) is not composed"):
        builder.add((record,), 0, 1)


@given(st.sampled_from(sorted(image.IGNORED_TYPES | image.TRANSACTION_TYPES)))
def test_passed_over_types_change_nothing_in_either(record_type: int) -> None:
    record = rec.MetadataRecord(0, record_type, 0, None)
    builder = net_effect.NetBuilder()
    builder.add((record,), 5, 1)
    after = builder.effect().apply(image.EMPTY_IMAGE)
    folded, _ = image.apply_delta(image.EMPTY_IMAGE, [record], offset=5, epoch=1)
    assert after == folded and after.topics == {} and uuid.UUID(int=0) not in after.topics
