"""ImageContext: a KRaft MetadataImage read as the controller context the simulation's scenarios and checks use.

Rules:
- It is the replay's MigrationControllerChannelContext (the propagator's view: every registered
  broker is live, fenced ones included; offline = not registered), plus the read-only
  ControllerContext members that ``expected_view``, the scenarios and the CLI read:
  ``partitions_leadership_info`` (a mapping, its length summed per topic: O(topics)),
  ``all_topics``, ``partitions_for_topic``, ``partitions_being_reassigned`` (adding or removing
  replicas), ``live_broker_ids`` (registered and unfenced), ``epoch``.
- ``LiveContext`` follows a changing image (``KraftDriver.ctx``): scenarios keep the context
  across steps, as they keep ControllerContext in zk mode; each read goes to an ImageContext of
  the image current at that moment (made once per image).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ctrlbatch.context import LeaderIsrAndControllerEpoch, TopicPartition
from ctrlbatch.replay.image.image import MetadataImage
from ctrlbatch.replay.propagate.channel_context import MigrationControllerChannelContext, leadership_of

__all__ = ["ImageContext", "LiveContext"]


class _Leadership(Mapping[TopicPartition, LeaderIsrAndControllerEpoch]):
    def __init__(self, image: MetadataImage) -> None:
        self.image = image

    def __getitem__(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch:
        topic = self.image.topic_by_name(tp.topic)
        p = None if topic is None else topic.partitions.get(tp.partition)
        if p is None:
            raise KeyError(tp)
        return leadership_of(p, self.image.epoch)

    def __iter__(self) -> Iterator[TopicPartition]:
        for name in sorted(self.image.topic_ids_by_name):
            topic = self.image.topic_by_name(name)
            if topic is not None:
                for p in sorted(topic.partitions):
                    yield TopicPartition(name, p)

    def __len__(self) -> int:
        return sum(len(t.partitions) for t in self.image.topics.values())


class ImageContext(MigrationControllerChannelContext):
    """The image as a controller context (see the module rules)."""

    @property
    def epoch(self) -> int:
        return self.image.epoch

    @property
    def partitions_leadership_info(self) -> Mapping[TopicPartition, LeaderIsrAndControllerEpoch]:
        return _Leadership(self.image)

    @property
    def all_topics(self) -> set[str]:
        return set(self.image.topic_ids_by_name)

    def partitions_for_topic(self, topic: str) -> set[TopicPartition]:
        t = self.image.topic_by_name(topic)
        return set() if t is None else {TopicPartition(topic, p) for p in t.partitions}

    @property
    def partitions_being_reassigned(self) -> set[TopicPartition]:
        return {TopicPartition(t.name, p) for t in self.image.topics.values() for p, reg in t.partitions.items()
                if reg.adding_replicas or reg.removing_replicas}

    @property
    def live_broker_ids(self) -> set[int]:
        return {b for b, reg in self.image.brokers.items() if not reg.fenced}


class LiveContext:
    """An ImageContext of whatever image ``current()`` returns now (see the module rules)."""

    def __init__(self, current: Callable[[], MetadataImage]) -> None:
        self._current = current
        self._view: ImageContext | None = None

    def __repr__(self) -> str:
        return f"LiveContext({self._current()!r})"

    def view(self) -> ImageContext:
        image = self._current()
        if self._view is None or self._view.image is not image:
            self._view = ImageContext(image)
        return self._view

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view(), name)
