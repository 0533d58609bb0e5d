# kio_peer.py: adapter between ctrlbatch's neutral dict form and kio 0.5.0 (PyPI), the independent peer
# codec that the tests cross-check the ctrlbatch codecs against.
#
# Imports only the stdlib and kio. It is a plain module, not part of a package: load it by path (snippet at
# the end of this comment). `python tests/peers/kio_peer.py` runs _self_check().
#
# DICT FORM (the project's to_dict()): keys are the snake_case of the Kafka JSON field names (a "_" before
# every capital letter, then lower-cased: "isKRaftController" -> "is_k_raft_controller", "V0Host" ->
# "v0_host"). Only the fields that exist in the version are present. Structs are dicts, arrays are lists,
# uuid fields are uuid.UUID (zero UUID = uuid.UUID(int=0)), strings are str, nullable values may be None,
# int16 error codes and ThrottleTimeMs are plain ints.
#
# API
#   KIO_VERSIONS: dict[int, range]        the versions kio 0.5.0 has for api keys 4, 5, 6, 18, 62, 63
#   kio_request_class(api_key, version)   kio's payload class (KioUnsupported if kio lacks that version)
#   kio_response_class(api_key, version)
#   to_kio(cls, d, strict=True)           dict form -> kio instance, recursively. strict: d must hold exactly
#                                         the fields of the version (KeyError naming missing/extra fields).
#                                         strict=False drops unknown keys and fills missing fields from
#                                         kio's defaults (KeyError if kio has none). Types and ranges are
#                                         checked (TypeError).
#   from_kio(obj) -> dict                 kio instance -> dict form, keys in schema order
#   kio_encode(obj) -> bytes              the body only: no size prefix, no header
#   kio_decode(cls, data) -> obj          the body only; ValueError unless every byte is consumed; kio's
#                                         kio.serial.errors.DecodeError subclasses (BufferUnderflow...) pass
#   KioUnsupported(Exception)             what kio cannot represent (quirks 1, 3, 7); tests may skip on it
#
# KIO 0.5.0 QUIRKS (checked against kio's source in site-packages/kio and by _self_check())
#  1. Versions. kio has LeaderAndIsr v0-7, StopReplica v0-4, UpdateMetadata v0-8, BrokerRegistration v0-4
#     and BrokerHeartbeat v0-1 (requests and responses): exactly the versions of shared/kafka/message/*.json.
#     It has neither BrokerRegistrationRequest v5 nor BrokerHeartbeatRequest v2 (KIP-1066 CordonedLogDirs).
#  2. Zero UUID is None. kio's uuid reader (serial/readers.py read_uuid) returns None for 16 zero bytes, also
#     for the elements of a []uuid (BrokerRegistration.LogDirs, BrokerHeartbeat.OfflineLogDirs); the writer
#     writes None as 16 zero bytes. Every uuid field is typed `UUID | None` although none is nullable in the
#     spec. This adapter maps UUID(int=0) -> None going in and None -> UUID(int=0) coming out.
#  3. Error codes are an enum. Every int16 "ErrorCode" field is kafka_type "error_code", typed
#     kio.schema.errors.ErrorCode (IntEnum; 0.5.0 knows exactly -1..127). kio can neither build nor decode a
#     code it does not know: read_error_code raises ValueError("<n> is not a valid ErrorCode"). to_kio and
#     kio_decode turn that into KioUnsupported. Kafka reads any int16 (newer Kafka has codes above 127).
#  4. ThrottleTimeMs is named "throttle_time" and typed datetime.timedelta (kafka_type "timedelta_i32"); the
#     writer sends round(total_seconds()*1000). The adapter maps int ms <-> timedelta exactly (all of
#     -2^31, 2^31-1 and 200,000 random int32 values round-trip), keeping the dict key "throttle_time_ms".
#  5. Names. kio appends "_" where a name would shadow a builtin: Type -> "type_", Id -> "id_". All other
#     names are the dict form's ("is_k_raft_controller", "zk_version", "v0_host", "want_shut_down", ...).
#  6. Tagged fields are ordinary dataclass fields whose field metadata holds "tag": UpdateMetadataRequest v8
#     type_ (tag 0, default 0) and BrokerHeartbeatRequest v1 offline_log_dirs (tag 0, default ()). On write
#     a tagged field is skipped when it == its dataclass default, then written in ascending tag order, as
#     Kafka does. Trap: a *list* [] != (), so an empty list would be written as a present, empty tagged
#     field (01 00 01 01 instead of 00); the adapter always passes tuples.
#  7. Unknown tagged fields cannot be represented: kio's dataclasses have no place for them, so it can't
#     carry or re-emit them, and decoding a body that has one fails with KeyError in serial/_parse.py
#     (_read_compiled looks the tag up among the known ones); kio_decode turns that into KioUnsupported.
#     Kafka keeps unknown tags as raw bytes and re-emits them. kio also ignores the size prefix of a known
#     tagged field and does not check that tags strictly ascend.
#  8. Defaults. kio's constructor defaults equal the spec "default"s wherever the spec has one (BrokerEpoch
#     -1, StopReplica LeaderEpoch -1, IsNew false, isKRaftController false, IsFenced true, IsCaughtUp false,
#     PreviousBrokerEpoch -1, LeaderRecoveryState 0, tagged Type 0). Arrays of primitives (incl. []uuid)
#     default to () without a spec default. Everything else is a required keyword argument, including
#     LeaderAndIsr's Type, ThrottleTimeMs, error codes and the nullable Racks. Defaults never change the
#     bytes of a non-tagged field: kio writes every field of the version.
#  9. Lenient where Kafka is strict (kio's bytes for valid values are the spec's; these are about invalid
#     input):
#     - None for a NON-nullable array is written as a null array (int32 -1, or compact 00), and a null array
#       decodes as None for any array field; Kafka refuses both ("non-nullable field ... was serialized as
#       null"). None of these ten messages has a nullable array.
#     - Compact (flexible) strings have no length limit on write or read (Kafka: at most 0x7fff bytes);
#       legacy strings are limited on write (OutOfBoundValue).
#     - No range or type checks on write beyond what struct.pack does; the adapter checks with the bounds of
#       kio's phantom types (i8/i16/i32/i64/u16/BrokerId) and rejects non-bool bools.
#     - An unsigned varint's 5th byte may carry 7 data bits (values up to 2^35-1); Java wraps to 32 bits.
# 10. Wire format: no difference from the spec found. _self_check() compares, for all 58 classes (29
#     versions x request/response), kio's field order, kafka types, nullability, tags and flexibility with
#     shared/kafka/message/*.json, and pins one hand-written UpdateMetadataRequest v8 body (Type=2 in the
#     tagged section). An independent spec-driven encoder (written from the JSON specs during the
#     investigation) gave byte-identical output for all 116 samples (58 classes x rich/plain values).
# 11. Entry points: kio.serial.entity_writer(cls) -> writer(buffer: IO[bytes], obj) and
#     kio.serial.entity_reader(cls) -> reader(buffer: bytes, offset) -> (obj, bytes_used); classes come from
#     kio.index.load_request_schema / load_response_schema(api_key, version). Instances are frozen, slotted,
#     kw_only dataclasses; arrays are tuples; i8/i16/i32/i64/u16/BrokerId are "phantom" types: calling one
#     range-checks and returns the plain int (TypeError out of range); TopicName is a str subclass.
# 12. Speed, UpdateMetadataRequest v8 with 200,000 partitions (4,000 topics x 50, RF 3, 100 live brokers with
#     one endpoint each; 9,725,711-byte body; 2 cores, CPython 3.11, median of 3): kio_encode 1.6 s,
#     kio_decode 3.7 s; to_kio 1.4 s and from_kio 1.1 s on top; peak RSS ~350 MB. Keep such sizes out of
#     the fast test tier.
#
# HOW A TEST LOADS IT (from a file in tests/; one shared copy per process)
#     import importlib.util, pathlib, sys
#     import pytest
#     pytest.importorskip("kio")
#     def _load_kio_peer():
#         if "kio_peer" not in sys.modules:
#             path = pathlib.Path(__file__).resolve().parent / "peers" / "kio_peer.py"
#             spec = importlib.util.spec_from_file_location("kio_peer", path)
#             module = importlib.util.module_from_spec(spec)
#             sys.modules["kio_peer"] = module
#             spec.loader.exec_module(module)
#         return sys.modules["kio_peer"]
#     kio_peer = _load_kio_peer()

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
import uuid

import kio.index
import kio.serial
from kio.schema.errors import ErrorCode

__all__ = [
    "KIO_VERSIONS",
    "KioUnsupported",
    "from_kio",
    "kio_decode",
    "kio_encode",
    "kio_request_class",
    "kio_response_class",
    "to_kio",
]

API_KEYS = (4, 5, 6, 18, 62, 63)
_ZERO_UUID = uuid.UUID(int=0)
_MS = datetime.timedelta(milliseconds=1)


class KioUnsupported(Exception):
    """kio 0.5.0 cannot represent this (missing version, unknown error code, unknown tagged field...)."""


def _kio_versions() -> dict[int, range]:
    out: dict[int, range] = {}
    for key in API_KEYS:
        name = kio.index.api_key_map[key]
        vs = sorted(kio.index.schema_name_map[name])
        assert vs == list(range(vs[0], vs[-1] + 1)), (key, vs)
        out[key] = range(vs[0], vs[-1] + 1)
    return out


KIO_VERSIONS: dict[int, range] = _kio_versions()
# == {4: range(0, 8), 5: range(0, 5), 6: range(0, 9), 18: range(0, 5), 62: range(0, 5), 63: range(0, 2)}


def _load(api_key: int, version: int, loader: typing.Callable[[int, int], type]) -> type:
    if api_key not in KIO_VERSIONS or version not in KIO_VERSIONS[api_key]:
        raise KioUnsupported(f"kio 0.5.0 has no api_key={api_key} version={version}")
    return loader(api_key, version)


def kio_request_class(api_key: int, version: int) -> type:
    return _load(api_key, version, kio.index.load_request_schema)


def kio_response_class(api_key: int, version: int) -> type:
    return _load(api_key, version, kio.index.load_response_schema)


# ---------------------------------------------------------------------------------------------------------
# Per-class conversion plans: [(kio_name, dict_name, to_kio_value, from_kio_value, has_default)]


def _strip_optional(tp: typing.Any) -> tuple[typing.Any, bool]:
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        assert len(args) == 1, tp
        return args[0], True
    return tp, False


def _dict_name(f: dataclasses.Field) -> str:
    name = f.name.rstrip("_")  # type_ -> type, id_ -> id
    if f.metadata.get("kafka_type", "").startswith(("timedelta_", "datetime_")):
        name += "_ms"  # throttle_time -> throttle_time_ms
    return name


def _scalar_converters(kafka_type: str, tp: typing.Any, nullable: bool, where: str):
    """(to_kio, from_kio) for one non-struct value."""
    if kafka_type == "uuid":

        def to_k(v):
            if not isinstance(v, uuid.UUID):
                raise TypeError(f"{where}: expected uuid.UUID, got {v!r}")
            return None if v.int == 0 else v

        def from_k(v):
            return _ZERO_UUID if v is None else v

        return to_k, from_k
    if kafka_type == "error_code":

        def to_k(v):
            try:
                return ErrorCode(v)
            except ValueError:
                raise KioUnsupported(f"{where}: kio 0.5.0 does not know error code {v!r}") from None

        return to_k, int
    if kafka_type == "timedelta_i32":

        def to_k(v):
            if type(v) is not int or not -(2**31) <= v < 2**31:
                raise TypeError(f"{where}: expected int32 milliseconds, got {v!r}")
            return datetime.timedelta(milliseconds=v)

        return to_k, lambda v: v // _MS
    if kafka_type == "bool":

        def to_k(v):
            if type(v) is not bool:
                raise TypeError(f"{where}: expected bool, got {v!r}")
            return v

        return to_k, bool
    if kafka_type == "string":

        def to_k(v):
            if v is None and nullable:
                return None
            if not isinstance(v, str):
                raise TypeError(f"{where}: expected str, got {v!r}")
            return v

        return to_k, (lambda v: v if v is None or type(v) is str else str(v))
    if kafka_type in ("int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"):
        # i8 / i16 / i32 / i64 / u16 / BrokerId... are kio phantom types over int; use their bounds
        lo, hi = tp.__low__, tp.__high__

        def to_k(v):
            if type(v) is not int or not lo <= v <= hi:
                raise TypeError(f"{where}: expected int in [{lo}, {hi}], got {v!r}")
            return v

        return to_k, int
    raise NotImplementedError(f"{where}: kafka_type {kafka_type!r}")


_PLANS: dict[type, list] = {}


def _plan(cls: type) -> list:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    plan = []
    for f in dataclasses.fields(cls):
        where = f"{cls.__name__}.{f.name}"
        tp, nullable = _strip_optional(f.type)
        is_array = typing.get_origin(tp) is tuple
        if is_array:
            tp, _ = _strip_optional(typing.get_args(tp)[0])
        if f.metadata.get("kafka_type") == "uuid":
            nullable = False  # kio types every uuid as UUID | None: None is its zero UUID, not a null
        if dataclasses.is_dataclass(tp):
            sub = tp

            def to_k(v, strict, sub=sub, where=where):
                if not isinstance(v, dict):
                    raise TypeError(f"{where}: expected dict, got {v!r}")
                return _to_kio(sub, v, strict)

            from_k = from_kio
        else:
            s_to, s_from = _scalar_converters(f.metadata["kafka_type"], tp, nullable, where)

            def to_k(v, strict, s_to=s_to):
                return s_to(v)

            from_k = s_from
        if is_array:

            def to_k(v, strict, e_to=to_k, where=where, nullable=nullable):  # noqa: F811
                if v is None and nullable:
                    return None
                if not isinstance(v, list | tuple):
                    raise TypeError(f"{where}: expected list, got {v!r}")
                return tuple(e_to(x, strict) for x in v)

            def from_k(v, e_from=from_k):  # noqa: F811
                return None if v is None else [e_from(x) for x in v]

        elif nullable:

            def to_k(v, strict, e_to=to_k):  # noqa: F811
                return None if v is None else e_to(v, strict)

            def from_k(v, e_from=from_k):  # noqa: F811
                return None if v is None else e_from(v)

        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        plan.append((f.name, _dict_name(f), to_k, from_k, has_default))
    _PLANS[cls] = plan
    return plan


def _to_kio(cls: type, d: dict, strict: bool):
    plan = _plan(cls)
    kwargs = {}
    missing = []
    for kio_name, name, to_k, _, has_default in plan:
        if name in d:
            kwargs[kio_name] = to_k(d[name], strict)
        elif strict or not has_default:
            missing.append(name)
    if missing or (strict and len(kwargs) != len(d)):
        extra = sorted(set(d) - {p[1] for p in plan}) if strict else []
        raise KeyError(
            f"{cls.__name__} v{cls.__version__}: missing fields {missing}, fields not in this version {extra}"
        )
    return cls(**kwargs)


def to_kio(cls: type, d: dict, strict: bool = True):
    """The dict form -> an instance of kio class `cls` (recursively)."""
    return _to_kio(cls, d, strict)


def from_kio(obj) -> dict:
    """A kio instance -> the dict form (keys in schema order)."""
    return {name: from_k(getattr(obj, kio_name)) for kio_name, name, _, from_k, _ in _plan(type(obj))}


def kio_encode(obj) -> bytes:
    """kio's bytes for the body (no size prefix, no header)."""
    buf = io.BytesIO()
    kio.serial.entity_writer(type(obj))(buf, obj)
    return buf.getvalue()


def kio_decode(cls: type, data: bytes):
    """Parse a body with kio; raises ValueError unless exactly all of `data` is consumed."""
    try:
        obj, used = kio.serial.entity_reader(cls)(data, 0)
    except KeyError as e:  # serial/_parse.py: unknown tag
        raise KioUnsupported(f"{cls.__name__}: kio cannot decode unknown tagged field {e}") from None
    except ValueError as e:
        if "ErrorCode" in str(e):
            raise KioUnsupported(f"{cls.__name__}: {e}") from None
        raise
    if used != len(data):
        raise ValueError(f"{cls.__name__}: {len(data) - used} trailing bytes after the body")
    return obj


# ---------------------------------------------------------------------------------------------------------
# Self-check: python tests/peers/kio_peer.py


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _in(vs: str | None, v: int) -> bool:
    if vs is None or vs == "none":
        return False
    if vs.endswith("+"):
        return v >= int(vs[:-1])
    lo, _, hi = vs.partition("-")
    return int(lo) <= v <= int(hi or lo)


def _load_spec(path):
    import json

    text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//"))
    return json.loads(text)


def _spec_walk(kcls: type, fields: list, path: str, v: int, common: dict) -> None:
    want = [f for f in fields if _in(f["versions"], v)]
    got = dataclasses.fields(kcls)
    # kio lists tagged fields in schema order too; compare position by position
    assert [_snake(f["name"]) for f in want] == [_dict_name(g) for g in got], (path, v)
    for f, g in zip(want, got, strict=True):
        where = f"{path}.{f['name']} v{v}"
        tag = f.get("tag") if _in(f.get("taggedVersions"), v) else None
        assert g.metadata.get("tag") == (None if tag is None else int(tag)), where
        tp, nullable = _strip_optional(g.type)
        ftype = f["type"]
        if ftype.startswith("[]"):
            assert typing.get_origin(tp) is tuple, where
            assert nullable == _in(f.get("nullableVersions"), v), where
            ftype = ftype[2:]
            tp, _ = _strip_optional(typing.get_args(tp)[0])
        elif ftype != "uuid":  # kio types every uuid as UUID | None
            assert nullable == _in(f.get("nullableVersions"), v), where
        if dataclasses.is_dataclass(tp):
            _spec_walk(tp, f.get("fields") or common[ftype], where, v, common)
        else:
            kt = g.metadata["kafka_type"]
            assert kt in {"int16": {"int16", "error_code"}, "int32": {"int32", "timedelta_i32"}}.get(
                ftype, {ftype}
            ), (where, kt)


def _spec_check(spec_dir) -> int:
    """Compare kio's classes with the JSON specs: field order, names, types, nullability, tags, flexibility."""
    names = {
        4: "LeaderAndIsr",
        5: "StopReplica",
        6: "UpdateMetadata",
        62: "BrokerRegistration",
        63: "BrokerHeartbeat",
    }
    checked = 0
    for key, base in names.items():
        for kind, loader in (("Request", kio_request_class), ("Response", kio_response_class)):
            spec = _load_spec(spec_dir / f"{base}{kind}.json")
            assert spec["apiKey"] == key
            lo, _, hi = spec["validVersions"].partition("-")
            assert KIO_VERSIONS[key] == range(int(lo), int(hi) + 1), (key, spec["validVersions"])
            common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
            for v in KIO_VERSIONS[key]:
                cls = loader(key, v)
                assert cls.__flexible__ == _in(spec["flexibleVersions"], v), (cls, v)
                _spec_walk(cls, spec["fields"], f"{base}{kind}", v, common)
                checked += 1
    return checked


def _sample_value(
    tp: typing.Any, kt: str | None, f: dataclasses.Field, n: int, i: int, seed: list, rich: bool
):
    if dataclasses.is_dataclass(tp):
        return _sample(tp, seed, "rich" if rich else "plain")
    if not rich:
        return {"uuid": _ZERO_UUID, "string": "", "bool": False}.get(kt, 0)
    return {
        "uuid": uuid.UUID(int=(n * 7919 + i) << 64 | (n + 1)),
        "string": f"s{n}.{i}-\u00e9\u4e2d",
        "bool": f.default is not True,
        "int8": 2,
        "int16": 300 + n,
        "uint16": 65000 + i,
        "int32": 70000 * n + i,
        "int64": 2**40 + n,
        "error_code": (3, 6, 75)[n % 3],
        "timedelta_i32": 1234 + n,
    }[kt]


def _sample(cls: type, seed: list, variant: str) -> dict:
    """A dict-form value for `cls`. variant 'rich': non-default everywhere; 'plain': zeros/None/empty."""
    out = {}
    rich = variant == "rich"
    for f in dataclasses.fields(cls):
        seed[0] += 1
        n = seed[0]
        tp, nullable = _strip_optional(f.type)
        is_array = typing.get_origin(tp) is tuple
        if is_array:
            tp, _ = _strip_optional(typing.get_args(tp)[0])
        kt = f.metadata.get("kafka_type")
        if is_array:
            value = [_sample_value(tp, kt, f, n, i, seed, rich) for i in range(3 if rich else 0)]
            if rich and kt == "uuid":
                value.append(_ZERO_UUID)  # zero UUID inside a []uuid comes back from kio as None
        elif nullable and kt == "string" and not rich:
            value = None
        else:
            value = _sample_value(tp, kt, f, n, 0, seed, rich)
        out[_dict_name(f)] = value
    return out


def _self_check() -> None:
    import pathlib

    expected = {4: range(0, 8), 5: range(0, 5), 6: range(0, 9), 18: range(0, 5), 62: range(0, 5), 63: range(0, 2)}
    assert KIO_VERSIONS == expected, KIO_VERSIONS
    n = 0
    for key, versions in KIO_VERSIONS.items():
        for v in versions:
            for cls in (kio_request_class(key, v), kio_response_class(key, v)):
                for variant in ("rich", "plain"):
                    d = _sample(cls, [0], variant)
                    obj = to_kio(cls, d)
                    data = kio_encode(obj)
                    back = from_kio(kio_decode(cls, data))
                    assert back == d, (cls, v, variant, d, back)
                    assert list(back) == list(d)
                    assert kio_encode(to_kio(cls, back)) == data
                    n += 1
    # Pinned names and bytes, written by hand from the spec: UpdateMetadataRequest v8 with Type=2 (tagged).
    cls = kio_request_class(6, 8)
    d = {
        "controller_id": 1,
        "is_k_raft_controller": True,
        "type": 2,
        "controller_epoch": 3,
        "broker_epoch": 4,
        "topic_states": [
            {
                "topic_name": "t",
                "topic_id": _ZERO_UUID,
                "partition_states": [
                    {
                        "partition_index": 0,
                        "controller_epoch": 3,
                        "leader": 1,
                        "leader_epoch": 5,
                        "isr": [1],
                        "zk_version": 6,
                        "replicas": [1],
                        "offline_replicas": [],
                    }
                ],
            }
        ],
        "live_brokers": [
            {
                "id": 1,
                "endpoints": [{"port": 9092, "host": "h", "listener": "L", "security_protocol": 0}],
                "rack": None,
            }
        ],
    }
    want = bytes.fromhex(
        "".join(
            [
                "00000001 01 00000003 0000000000000004",  # controller_id, is_k_raft_controller, epochs
                "02 0274" + " 00" * 16,  # topic_states: 1 topic, name "t", zero topic_id
                "02 00000000 00000003 00000001 00000005",  # 1 partition: index, c-epoch, leader, l-epoch
                "0200000001 00000006 0200000001 01 00 00",  # isr, zk_version, replicas, [], tags, tags
                "02 00000001 02 00002384 0268 024c 0000 00",  # live_brokers: id, endpoint port/host/...
                "00 00",  # rack null, broker tags
                "01 00 01 02",  # top-level tagged section: 1 field, tag 0, size 1, Type=2
            ]
        ).replace(" ", "")
    )
    data = kio_encode(to_kio(cls, d))
    assert data == want, (data.hex(), want.hex())
    assert from_kio(kio_decode(cls, data)) == d
    # What kio cannot represent.
    resp = kio_response_class(6, 8)
    try:
        to_kio(resp, {"error_code": 1000})
        raise AssertionError("unknown error code accepted")
    except KioUnsupported:
        pass
    try:
        kio_decode(resp, bytes.fromhex("03e800"))
        raise AssertionError("unknown error code decoded")
    except KioUnsupported:
        pass
    try:  # UpdateMetadataResponse v8 with an unknown tagged field (tag 5, 1 byte)
        kio_decode(resp, bytes.fromhex("0000010501ff"))
        raise AssertionError("unknown tag decoded")
    except KioUnsupported:
        pass
    spec_dir = pathlib.Path(__file__).resolve().parents[3] / "shared" / "kafka" / "message"
    checked = _spec_check(spec_dir) if spec_dir.is_dir() else 0
    print(
        f"kio_peer self-check: {n} round trips ok; {checked} classes match {spec_dir} (0 = specs not found)"
    )


if __name__ == "__main__":
    _self_check()
