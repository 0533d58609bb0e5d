"""Errors raised by the codecs, and the one check of a bytes-like argument.

Rules: decoding never lets anything but DecodeError escape; encoding raises
UnsupportedVersionError (Kafka's UnsupportedVersionException) for version problems and
EncodeError for values that cannot be put on the wire. Both name the message and field.
A decode entry point given something that is not bytes, bytearray or memoryview raises
NotBytesError, which is both a TypeError (the argument has the wrong type) and a DecodeError (so
one `except DecodeError` still catches every bad input), naming the parameter and the type
received: `check_buffer` is that check, used by every entry point (Message.decode,
decode_request, decode_response, FrameReader.feed).
"""

from __future__ import annotations

from typing import Any


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
        parts = [
            p
            for p in (where, f"field {field}" if field else "", f"at byte offset {offset}" if offset is not None else "")
            if p
        ]
        super().__init__(f"{', '.join(parts)}: {reason}" if parts else reason)

    def __reduce__(self) -> tuple[Any, ...]:  # keep keyword attributes through pickling (Spark ships exceptions)
        return (_rebuild, (type(self), self.reason, self.message, self.version, self.field, self.offset))


class NotBytesError(DecodeError, TypeError):
    """A decode entry point was given something that is not bytes-like (see the module rules)."""


BUFFER_TYPES = (bytes, bytearray, memoryview)


def check_buffer(value: object, parameter: str, *, message: str = "", version: int | None = None) -> None:
    """Raise NotBytesError unless value is bytes, bytearray or memoryview. `parameter` is the
    argument's name as the caller wrote it; message/version say what was being decoded."""
    if not isinstance(value, BUFFER_TYPES):
        raise NotBytesError(
            f"{parameter} must be bytes, bytearray or memoryview, not {type(value).__name__}",
            message=message, version=version,
        )


def _rebuild(
    cls: type[DecodeError], reason: str, message: str, version: int | None, field: str, offset: int | None
) -> DecodeError:
    return cls(reason, message=message, version=version, field=field, offset=offset)

