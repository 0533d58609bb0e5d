"""Topic ids: Python's ``uuid.UUID`` standing in for Kafka's ``Uuid``.

Rules:
- Ids are plain ``uuid.UUID`` values; ``ZERO_UUID`` is Kafka's ``Uuid.ZERO_UUID`` (16 zero bytes),
  which the request builders write for a topic that has no id.
- ``kafka_uuid_string`` renders an id the way Kafka's ``Uuid.toString`` does (URL-safe base64 of
  the 16 bytes, no padding), so messages that embed an id match Kafka's text.
"""

from __future__ import annotations

import base64
import uuid

from ctrlbatch.requests.spec import ZERO_UUID  # the one definition; re-exported for the context's users

__all__ = ["ZERO_UUID", "kafka_uuid_string"]


def kafka_uuid_string(value: uuid.UUID) -> str:
    """Kafka's textual form of ``value``, e.g. ``AAAAAAAAAAAAAAAAAAAAAA`` for the zero id."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")
