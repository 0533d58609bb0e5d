"""Errors raised by the codecs.

Rules: decoding never lets anything but DecodeError escape; encoding raises
UnsupportedVersionError (Kafka's UnsupportedVersionException) for version problems and
EncodeError for values that cannot be put on the wire. Both name the message and field.
"""

from __future__ import annotations


class UnsupportedVersionError(Exception):
    """Kafka's UnsupportedVersionException: the value cannot be written at this version."""


class EncodeError(ValueError):
    """A value cannot be serialized (wrong type, out of range, too long, null where not allowed)."""


class DecodeError(ValueError):
    """Bytes that are not a valid message: names the message, version, field and byte offset."""

    def __init__(
        self,
        reason: str,
        *,
        message: str = "",
        version: int | None = None,
        field: str = "",
        offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.message = message
        self.version = version
        self.field = field
        self.offset = offset
        where = message if version is None else f"{message} v{version}"
        parts = [p for p in (where, f"field {field}" if field else "", f"at byte offset {offset}" if offset is not None else "") if p]
        super().__init__(f"{', '.join(parts)}: {reason}" if parts else reason)

    def __reduce__(self):  # keep keyword attributes through pickling (Spark ships exceptions)
        return (_rebuild_decode_error, (self.reason, self.message, self.version, self.field, self.offset))


def _rebuild_decode_error(reason, message, version, field, offset):  # type: ignore[no-untyped-def]
    return DecodeError(reason, message=message, version=version, field=field, offset=offset)
