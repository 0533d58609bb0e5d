"""The generators' own rules: which fields a version writes (spec.fields_at), and that every line
of a generated decoder that can fail carries the note codec.py explains the failure from."""

from __future__ import annotations

from typing import Any

import pytest

from ctrlbatch.requests import messages as msgs
from ctrlbatch.requests.codec import _classes
from ctrlbatch.requests.gen_decoder import FieldNote, RunNote, decoder_source
from ctrlbatch.requests.spec import fields_at, iter_structs
from ctrlbatch.testing import all_versions

CASES = all_versions([getattr(msgs, n) for n in msgs.__all__])
IDS = [f"{c.__name__}-v{v}" for c, v in CASES]


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
def test_fields_at_splits_every_struct_in_spec_order(cls: Any, version: int) -> None:
    for st in [cls.MESSAGE.struct, *iter_structs(cls.MESSAGE.fields)]:
        at = fields_at(st, version)
        assert sorted(at.positional + at.tagged + at.absent, key=st.fields.index) == list(st.fields)
        for group in (at.positional, at.tagged, at.absent):
            assert list(group) == sorted(group, key=st.fields.index)
        assert all(version in f.versions and version not in f.tagged_versions for f in at.positional)
        assert all(version in f.tagged_versions for f in at.tagged)
        assert all(version not in f.versions for f in at.absent)


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
def test_every_decoder_line_past_the_header_has_a_note_naming_a_field_of_the_message(cls: Any, version: int) -> None:
    src = decoder_source(cls.MESSAGE, version, _classes(cls))
    assert [line.strip() for line in src.lines[:2]] == ["def decode(buf, pos):", "end = len(buf)"]
    assert src.notes[:2] == [None, None]
    prefix = cls.MESSAGE.name
    for line, note in zip(src.lines[2:], src.notes[2:], strict=True):
        assert isinstance(note, FieldNote | RunNote), line
        paths = [note.path] if isinstance(note, FieldNote) else [p for p, _ in note.items]
        assert all(p == prefix or p.startswith(prefix + ".") for p in paths), (line, paths)
        if isinstance(note, RunNote):
            assert "unpack_from" in line or "= buf[pos]" in line, line
