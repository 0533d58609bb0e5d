"""The struct encoder taking fields as arguments (codec.positional_encoder_for, used by the batch
to encode partition states it holds as references): for every struct of every message at every
version, the bytes are the object encoder's, and where the object encoder fails it fails too."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import LeaderAndIsrRequest
from ctrlbatch.requests import messages as msgs
from ctrlbatch.requests.layout import struct_args_encoder, struct_encoder
from ctrlbatch.requests.spec import iter_structs
from ctrlbatch.testing import all_versions
from ctrlbatch.testing.messages import struct_of

CLASSES = [getattr(msgs, n) for n in msgs.__all__]
STRUCT_CASES = [
    (cls, s.name, v) for cls, v in all_versions(CLASSES) for s in iter_structs(cls.MESSAGE.fields) if v in s.versions
]


def _struct_class(cls: Any, name: str) -> Any:
    todo = list(cls.STRUCT_TYPES.values())
    while todo:
        c = todo.pop()
        if c.__name__ == name:
            return c
        todo.extend(c.STRUCT_TYPES.values())
    raise KeyError(name)


def _names(sub: Any) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(sub) if f.name != "unknown_tagged_fields")


@pytest.mark.parametrize(("cls", "name", "version"), STRUCT_CASES, ids=[f"{c.__name__}.{n}-v{v}" for c, n, v in STRUCT_CASES])
@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_arguments_encode_as_the_object(cls: Any, name: str, version: int, data: st.DataObject) -> None:
    sub = _struct_class(cls, name)
    names = _names(sub)
    obj = data.draw(struct_of(sub, version, cls.is_flexible(version), max_size=4))
    args = [getattr(obj, n) for n in names]
    want = struct_encoder(cls, name, version)(obj)
    got = struct_args_encoder(cls, name, version, names)(*args, unknown_tagged_fields=obj.unknown_tagged_fields)
    assert got == want


def test_a_value_the_object_encoder_refuses_fails_too() -> None:
    names = _names(_struct_class(LeaderAndIsrRequest, "LeaderAndIsrPartitionState"))
    state = _struct_class(LeaderAndIsrRequest, "LeaderAndIsrPartitionState")(leader=1 << 40)
    with pytest.raises(Exception, match="PartitionState.Leader"):
        struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", 7)(state)
    with pytest.raises(Exception):  # noqa: B017 - the fast encoder's own error (struct.error), untranslated
        struct_args_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", 7, names)(*[getattr(state, n) for n in names])


def test_names_must_cover_the_fields_read() -> None:
    with pytest.raises(ValueError, match="names lack"):
        struct_args_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", 7, ("leader",))
