"""The metadata image as plain values: what the Spark plan composes on the driver and ships.

Rules of this module:
- A ``PackedImage`` holds what a ``MetadataImage`` holds, every field, with the topics as
  ``{topic id: (name, {partition: the PartitionRegistration's fields as a tuple})}`` and the
  brokers, names, metadata.version, offset and epoch as the image has them. Dict order is the
  image's (``unpack_image(pack_image(i))`` equals ``i`` item for item, in order).
- Why plain values: pickling 10^5 attrs objects costs seconds (slots_setstate per object), and
  composing net effects on tuples builds no object per partition (net_effect.compose); the
  image's objects are rebuilt once, in the unit task that replays from it.
- The partition tuple follows ``PartitionRegistration``'s field order, which ``PART_FIELDS``
  records: a packed image carries it, and unpacking checks it, so an executor running another
  version of ctrlbatch than the driver fails with that said rather than with shifted fields.
  Once checked, the registrations are made by image.py's trusted constructor (0.18 against
  0.53 us each: the fields are the packed registration's own, as image.py folds them), about
  18 ms less per unit task on 50,000 partitions.
- Packed values are never mutated once built (they are shared between consecutive images:
  copy on write, as MetadataImage's dicts are).
"""

from __future__ import annotations

import operator
import uuid
from typing import Any, NamedTuple

import attrs

from ctrlbatch.context import MetadataVersion

from .image import BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage, make_partition

__all__ = ["PART_FIELDS", "PackedImage", "PackedPartition", "pack_image", "part_values", "unpack_image"]

PART_FIELDS = tuple(f.name for f in attrs.fields(PartitionRegistration))
_IMAGE_FIELDS = ("brokers", "topics", "topic_ids_by_name", "metadata_version", "offset", "epoch")
_TOPIC_FIELDS = ("id", "name", "partitions")
PackedPartition = tuple[Any, ...]
part_values: Any = operator.attrgetter(*PART_FIELDS)  # a PartitionRegistration's fields as a tuple, in order


class PackedImage(NamedTuple):
    """A MetadataImage as plain values (module rules)."""

    part_fields: tuple[str, ...]
    brokers: dict[int, BrokerRegistration]
    topics: dict[uuid.UUID, tuple[str, dict[int, PackedPartition]]]
    topic_ids_by_name: dict[str, uuid.UUID]
    metadata_version: MetadataVersion
    offset: int
    epoch: int


def _check_fields() -> None:
    """The module's packing names every field of the image classes (a new field fails here)."""
    if tuple(f.name for f in attrs.fields(MetadataImage)) != _IMAGE_FIELDS or \
            tuple(f.name for f in attrs.fields(TopicImage)) != _TOPIC_FIELDS:
        raise RuntimeError("packed_image: MetadataImage or TopicImage gained a field; pack it")


_check_fields()


def pack_image(image: MetadataImage) -> PackedImage:
    """The image as plain values (module rules)."""
    return PackedImage(
        PART_FIELDS,
        dict(image.brokers),
        {tid: (t.name, {p: part_values(reg) for p, reg in t.partitions.items()})
         for tid, t in image.topics.items()},
        dict(image.topic_ids_by_name),
        image.metadata_version, image.offset, image.epoch,
    )


def unpack_image(packed: PackedImage | tuple[Any, ...]) -> MetadataImage:
    """The MetadataImage a packed image holds (checks the partition fields: module rules)."""
    part_fields, brokers, topics, names, version, offset, epoch = packed
    if tuple(part_fields) != PART_FIELDS:
        raise RuntimeError("the executors run another version of ctrlbatch than the driver (PartitionRegistration)")
    reg = make_partition  # trusted: the values are a PartitionRegistration's own fields (module rules)
    rebuilt = {
        tid: TopicImage(tid, name, {p: reg(*values) for p, values in parts.items()})
        for tid, (name, parts) in topics.items()
    }
    return MetadataImage(dict(brokers), rebuilt, dict(names), version, offset, epoch)
