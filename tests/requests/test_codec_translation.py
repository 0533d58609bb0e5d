"""The one error-translation point (codec.py) and the compile helper (emit.py): thread safety,
tracebacks through generated code, the bytes check, and what a rejected input leaves behind.
"""

from __future__ import annotations

import inspect
import linecache
import re
import sys
import threading
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    BrokerRegistrationRequest,
    DecodeError,
    EncodeError,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    NotBytesError,
    StopReplicaRequest,
    UnsupportedVersionError,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    codec,
    specgen,
)
from ctrlbatch.requests.emit import Source, compile_source
from ctrlbatch.requests.errors import check_buffer
from ctrlbatch.testing import all_versions, messages


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads switch every microsecond, so that two decodes interleave inside the codec."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _bad_isr(topics: int, bad_topic: int) -> bytes:
    """LeaderAndIsr v4 whose topic `bad_topic`'s only partition has a null Isr (compact 00)."""
    states = [
        LeaderAndIsrTopicState(topic_name=f"t{t}", partition_states=[LeaderAndIsrPartitionState(partition_index=0, isr=(7,))])
        for t in range(topics)
    ]
    raw = bytearray(LeaderAndIsrRequest(topic_states=states).encode(4))
    # Each topic's Isr is the one-element array 02 00 00 00 07; null it in the bad topic.
    at = -1
    for _ in range(bad_topic + 1):
        at = raw.index(b"\x02\x00\x00\x00\x07", at + 1)
    raw[at] = 0
    return bytes(raw)


def _run_together(jobs: list[Callable[[], None]]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def run(job: Callable[[], None]) -> None:
        start.wait()
        try:
            job()
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors


def _race(small: Callable[[], None], big: Callable[[], None], rounds: int = 3000) -> None:
    """Run `small` rounds times in one thread while another runs `big` until it is done."""
    done = threading.Event()

    def run_small() -> None:
        try:
            for _ in range(rounds):
                small()
        finally:
            done.set()

    def run_big() -> None:
        while not done.is_set():
            big()

    _run_together([run_small, run_big])


def test_two_threads_decoding_bad_inputs_get_their_own_field_paths(fast_switching: None) -> None:
    # With the failing field read back from module globals, one thread's path leaked into the
    # other's error whenever their explanations interleaved (seen within a few hundred rounds).
    def expect(data: bytes, path: str) -> Callable[[], None]:
        def run() -> None:
            with pytest.raises(DecodeError) as info:
                LeaderAndIsrRequest.decode(data, 4)
            assert info.value.field == path
            assert info.value.reason == "non-nullable field isr was serialized as null"
        return run

    _race(expect(_bad_isr(2, 1), "LeaderAndIsrRequest.TopicStates[1].PartitionStates[0].Isr"),
          expect(_bad_isr(400, 399), "LeaderAndIsrRequest.TopicStates[399].PartitionStates[0].Isr"))


def test_two_threads_encoding_bad_objects_get_their_own_field_paths(fast_switching: None) -> None:
    def expect(leaders: int, bad: int) -> Callable[[], None]:
        objs = [LeaderAndIsrLiveLeader(broker_id=i, host_name="h", port=9092) for i in range(leaders)]
        objs[bad] = LeaderAndIsrLiveLeader(broker_id=bad, host_name="h", port=2**40)
        obj = LeaderAndIsrRequest(live_leaders=objs)

        def run() -> None:
            with pytest.raises(EncodeError) as info:
                obj.encode(4)
            assert f"field LeaderAndIsrRequest.LiveLeaders[{bad}].Port:" in str(info.value)
        return run

    _race(expect(2, 1), expect(400, 399))


def test_a_traceback_through_a_generated_encoder_shows_the_generated_line() -> None:
    with pytest.raises(EncodeError) as info:
        LeaderAndIsrRequest(controller_id="one").encode(4)
    cause = info.value.__cause__
    assert cause is not None
    text = "".join(traceback.format_exception(cause))
    assert "<ctrlbatch encode LeaderAndIsrRequest v4 checked" in text
    assert ".pack(o.controller_id)" in text  # the generated source line itself


def test_compile_source_gives_each_source_its_own_registered_filename() -> None:
    a = compile_source("def f():\n    return 1 / 0\n", "<ctrlbatch test same-name>", {})["f"]
    b = compile_source("def f():\n    x = 2\n    return x / 0\n", "<ctrlbatch test same-name>", {})["f"]
    name_a, name_b = a.__code__.co_filename, b.__code__.co_filename
    assert name_a != name_b and name_b.startswith("<ctrlbatch test same-name-") and name_b.endswith(">")
    assert linecache.getline(name_a, 2) == "    return 1 / 0\n"
    assert linecache.getline(name_b, 3) == "    return x / 0\n"
    linecache.checkcache()  # generated entries have no file to check against: they stay
    assert linecache.getline(name_b, 3) == "    return x / 0\n"
    with pytest.raises(ZeroDivisionError) as info:
        b()
    assert "return x / 0" in "".join(traceback.format_exception(info.value))
    assert inspect.getsource(b) == "def f():\n    x = 2\n    return x / 0\n"


def test_source_blocks_own_their_indent_and_notes() -> None:
    s = Source()
    with s.block("def f(x):"):
        s.set_note("outer")
        with s.block("if x:"):
            s.set_note("inner")
            s("return 1")
        with s.null_conditional("x is None", "return 2"):
            s("return 3")
    assert s.lines == [
        "def f(x):", "    if x:", "        return 1", "    if x is None:", "        return 2", "    else:",
        "        return 3",
    ]
    assert [s.note_at(i) for i in range(1, 8)] == [None, "outer", "inner", "outer", "outer", "outer", "outer"]
    f = s.compile("<ctrlbatch test blocks>")["f"]
    assert (f(1), f(None), f(0)) == (1, 2, 3)


# ---------------------------------------------------------------- non-bytes arguments


@pytest.mark.parametrize(("data", "type_name"), [("ab", "str"), (None, "NoneType"), (2, "int"), ([1], "list")])
def test_decode_of_a_non_buffer_names_the_parameter_and_the_type(data: Any, type_name: str) -> None:
    with pytest.raises(NotBytesError) as info:
        UpdateMetadataResponse.decode(data, 0)
    e = info.value
    assert isinstance(e, TypeError) and isinstance(e, DecodeError)
    assert str(e) == f"UpdateMetadataResponse v0: data must be bytes, bytearray or memoryview, not {type_name}"


def test_check_buffer_accepts_the_three_buffer_types_and_names_the_parameter() -> None:
    for ok in (b"x", bytearray(b"x"), memoryview(b"x")):
        check_buffer(ok, "frame")
    with pytest.raises(NotBytesError) as info:
        check_buffer("x", "frame")
    assert str(info.value) == "frame must be bytes, bytearray or memoryview, not str"


def test_decode_accepts_bytearray_and_memoryview() -> None:
    raw = UpdateMetadataResponse(error_code=3).encode(0)
    for data in (bytearray(raw), memoryview(raw)):
        assert UpdateMetadataResponse.decode(data, 0) == UpdateMetadataResponse(error_code=3)


# ---------------------------------------------------------------- what a rejection leaves behind


def _hostile(topics: int) -> bytes:
    """LeaderAndIsr v4 with `topics` empty topic states whose last byte (the top-level tagged
    section) announces a tag that is not there: it fails at its very end."""
    raw = LeaderAndIsrRequest(topic_states=[LeaderAndIsrTopicState()] * topics).encode(4)
    assert raw[-1:] == b"\x00"
    return raw[:-1] + b"\x01"


def test_a_rejected_body_is_explained_at_its_last_byte() -> None:
    data = _hostile(1000)
    with pytest.raises(DecodeError) as info:
        LeaderAndIsrRequest.decode(data, 4)
    e = info.value
    assert (e.field, e.offset) == ("LeaderAndIsrRequest.<tagged fields>", len(data))
    assert e.reason == "the buffer ends inside a varint"


def test_a_rejection_keeps_nothing_of_the_failed_attempt() -> None:
    data = _hostile(200_000)  # about 40 MB of topic states if kept
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with pytest.raises(DecodeError) as info:
            LeaderAndIsrRequest.decode(data, 4)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert info.value.__context__ is None and info.value.__cause__ is None
    assert kept < 1_000_000, kept


# ---------------------------------------------------------------- explained from the failing line


def test_a_truncated_fused_read_names_the_first_field_that_does_not_fit() -> None:
    # UpdateMetadataRequest v0 starts with ControllerId, ControllerEpoch (int32s), read in one go.
    with pytest.raises(DecodeError) as info:
        UpdateMetadataRequest.decode(b"\x00\x00\x00\x01\x00\x00", 0)
    e = info.value
    assert (e.field, e.offset) == ("UpdateMetadataRequest.ControllerEpoch", 4)
    assert e.reason == "the data ends inside this field (it takes 4 bytes, 2 remain)"


def test_a_truncation_inside_an_array_element_names_its_index() -> None:
    raw = LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(broker_id=i, host_name="h", port=1) for i in range(3)]).encode(3)
    # v3 ends with LiveLeaders: (BrokerId int32, HostName int16 + 1 byte, Port int32) each; cut in the last Port.
    with pytest.raises(DecodeError) as info:
        LeaderAndIsrRequest.decode(raw[:-1], 3)
    assert (info.value.field, info.value.offset) == ("LeaderAndIsrRequest.LiveLeaders[2].Port", len(raw) - 4)


# ---------------------------------------------------------------- the version parameter


@pytest.mark.parametrize("encode", [True, False])
@pytest.mark.parametrize(("version", "shown"), [("8", "str ('8')"), (4.0, "float (4.0)"), (True, "bool (True)"), (None, "NoneType (None)")])
def test_a_version_that_is_not_an_int_says_what_it_expects(encode: bool, version: Any, shown: str) -> None:
    with pytest.raises(TypeError) as info:
        codec.build(LeaderAndIsrRequest, version, encode=encode)
    assert str(info.value) == f"version must be an int in LeaderAndIsrRequest's valid range 0-7, not {shown}"


def test_an_int_version_out_of_range_keeps_kafkas_text() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        codec.check_version(LeaderAndIsrRequest.MESSAGE, 8, encode=True)
    assert str(info.value) == "Can't write version 8 of LeaderAndIsrRequest"
    with pytest.raises(DecodeError) as dinfo:
        codec.check_version(LeaderAndIsrRequest.MESSAGE, -1, encode=False)
    assert str(dinfo.value) == "LeaderAndIsrRequest v-1: Can't read version -1 of LeaderAndIsrRequest"
    codec.check_version(LeaderAndIsrRequest.MESSAGE, 7, encode=True)


# ---------------------------------------------------------------- specgen's command line


def test_specgen_help_is_help_not_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        specgen.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m ctrlbatch.requests.specgen [-h] [folder]")
    assert "the folder of Kafka's JSON message specs (default: ../shared/kafka/message)" in " ".join(out.split())


def test_specgen_names_a_folder_that_is_not_one(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        specgen.main([str(tmp_path / "nope")])
    assert info.value.code == 2
    assert f"'{tmp_path / 'nope'}' is not a folder of Kafka JSON message specs" in capsys.readouterr().err
    (tmp_path / "RequestHeader.json").write_text("{}")
    with pytest.raises(SystemExit):
        specgen.main([str(tmp_path)])
    assert "lacks ResponseHeader.json, LeaderAndIsrRequest.json" in capsys.readouterr().err


# ---------------------------------------------------------------- property: paths point into the object


_INDEXED = re.compile(r"^(\w+)\[(\d+)\]$")


def _resolve(obj: Any, path: str) -> None:
    """Walk a DecodeError field path through the object whose encoding was cut: every name is a
    field of the struct reached so far, every index is inside the array it indexes."""
    head, *rest = path.split(".")
    assert head == obj.MESSAGE.name, path
    node: Any = obj
    for i, segment in enumerate(rest):
        if segment == "<tagged fields>":
            assert i == len(rest) - 1, path
            return
        m = _INDEXED.match(segment)
        name = m.group(1) if m else segment
        f = node.SPEC.field(name)  # KeyError: not a field of this struct
        value = getattr(node, f.attr)
        if m:
            assert f.is_array and int(m.group(2)) < len(value), path
            node = value[int(m.group(2))]
        elif f.struct is not None and i < len(rest) - 1:
            node = value


CUT_CASES = all_versions([LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest, BrokerRegistrationRequest])


@pytest.mark.parametrize(("cls", "version"), CUT_CASES, ids=[f"{c.__name__}-v{v}" for c, v in CUT_CASES])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_cut_encoding_is_explained_by_a_field_of_the_object_inside_the_data(cls: Any, version: int, data: st.DataObject) -> None:
    obj = data.draw(messages(cls, version, max_size=3), label="object")
    raw = obj.encode(version)
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
    with pytest.raises(DecodeError) as info:
        cls.decode(raw[:cut], version)
    e = info.value
    assert e.offset is not None and 0 <= e.offset <= cut, str(e)
    _resolve(obj, e.field)
