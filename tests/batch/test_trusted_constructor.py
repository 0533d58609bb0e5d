"""The trusted constructors of ctrlbatch.requests.model (`make`, `maker`), which the batch and the
decoders rely on: each fills a twin class whose slot layout must match the real class exactly
(same slots in the same order, same instance size, no __dict__ or __weakref__), and builds the
same value as the class's own __init__, whatever order a call site names the attributes in.
"""

from __future__ import annotations

import os

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import LeaderAndIsrPartitionState, UpdateMetadataPartitionState, catalog
from ctrlbatch.requests.gen_classes import load_message_classes
from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.model import Struct
from ctrlbatch.requests.spec import iter_structs
from ctrlbatch.testing import messages

SHARED_METADATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "kafka", "metadata")


def _shipped_classes() -> list[type[Struct]]:
    import ctrlbatch.requests.messages as shipped

    out: list[type[Struct]] = []
    for spec in catalog.MESSAGES:
        module = getattr(shipped, spec.name)
        out.append(module)
        out.extend(module.STRUCT_TYPES.values())
        for cls in list(out):
            out.extend(c for c in cls.STRUCT_TYPES.values() if c not in out)
    return list(dict.fromkeys(out))


def _runtime_classes() -> list[type[Struct]]:
    """Classes generated at run time from a Kafka JSON spec (a KRaft metadata record)."""
    spec = load_json_spec(os.path.join(SHARED_METADATA, "PartitionRecord.json"))
    return list(load_message_classes(spec).values())


ALL = _shipped_classes()


def _check_twin(cls: type[Struct]) -> None:
    names = [a.name for a in attrs.fields(cls)]
    twin = cls.make.twin
    assert tuple(cls.__slots__) == tuple(names) == tuple(twin.__slots__)
    assert names[-1] == "unknown_tagged_fields"
    assert twin.__basicsize__ == cls.__basicsize__
    assert twin.__bases__ == cls.__bases__
    assert cls.__dictoffset__ == 0 and cls.__weakrefoffset__ == 0
    assert twin.__dictoffset__ == 0 and twin.__weakrefoffset__ == 0
    # Every slot descriptor of the twin sits where the class's does: a value stored through the
    # twin's descriptor reads back through the class's.
    for n in names:
        assert getattr(twin, n).__objclass__ is twin and getattr(cls, n).__objclass__ is cls


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_twin_layout_matches_the_class(cls):
    _check_twin(cls)


def test_twin_layout_matches_for_run_time_classes():
    classes = _runtime_classes()
    assert classes
    for cls in classes:
        _check_twin(cls)


def _message_classes() -> list[tuple[type[Struct], int]]:
    import ctrlbatch.requests.messages as shipped

    return [(getattr(shipped, spec.name), spec.valid_versions.highest) for spec in catalog.MESSAGES]


@pytest.mark.parametrize("cls, version", _message_classes(), ids=lambda x: getattr(x, "__name__", str(x)))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_make_builds_what_init_builds(cls, version, data):
    obj = data.draw(messages(cls, version))
    for c in [cls, *cls.STRUCT_TYPES.values()]:
        assert c.make.twin is not None
    values = {a.name: getattr(obj, a.name) for a in attrs.fields(cls)}
    by_keyword = cls.make(**values)
    by_position = cls.make(*values.values())
    assert type(by_keyword) is cls and type(by_position) is cls
    assert by_keyword == obj == by_position
    assert hash(by_keyword) == hash(obj)
    assert by_keyword.encode(version) == obj.encode(version)


@settings(deadline=None)  # the first call of a new order generates its constructor
@given(order=st.permutations([a.name for a in attrs.fields(LeaderAndIsrPartitionState)][:-1]))
def test_maker_takes_the_call_sites_order(order):
    values = {
        "topic_name": "t", "partition_index": 3, "controller_epoch": 4, "leader": 5, "leader_epoch": 6,
        "isr": (5, 6), "partition_epoch": 7, "replicas": (5, 6, 7), "adding_replicas": (7,),
        "removing_replicas": (), "is_new": True, "leader_recovery_state": 1,
    }
    make = LeaderAndIsrPartitionState.maker(*order)
    built = make(*(values[n] for n in order))
    assert type(built) is LeaderAndIsrPartitionState
    assert built == LeaderAndIsrPartitionState(**values)
    assert built.unknown_tagged_fields == ()
    assert make.twin is LeaderAndIsrPartitionState.make.twin


def test_maker_refuses_names_that_do_not_fit():
    with pytest.raises(TypeError, match="UpdateMetadataPartitionState.maker: no such attribute zkVersion; missing zk_version"):
        UpdateMetadataPartitionState.maker(
            "topic_name", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "zkVersion",
            "replicas", "offline_replicas",
        )
    with pytest.raises(TypeError, match="named twice leader"):
        UpdateMetadataPartitionState.maker(
            "topic_name", "partition_index", "controller_epoch", "leader", "leader", "leader_epoch", "isr",
            "zk_version", "replicas", "offline_replicas",
        )


def test_the_batch_call_sites_name_every_attribute():
    from ctrlbatch.batch import request_batch

    for make, cls in ((request_batch.make_lair_state, LeaderAndIsrPartitionState),
                      (request_batch.make_umr_state, UpdateMetadataPartitionState)):
        assert make.twin is cls.make.twin
        assert make.__code__.co_argcount == len(attrs.fields(cls)) - 1  # all but unknown_tagged_fields


def test_every_struct_of_the_catalog_is_covered():
    names = {c.__name__ for c in ALL}
    for spec in catalog.MESSAGES:
        assert spec.name in names
        assert {s.name for s in iter_structs(spec.fields)} <= names
