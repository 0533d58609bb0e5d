"""Channel metrics: Kafka's QueueSize, TotalQueueSize and RequestRateAndQueueTimeMs, as values.

Rules: a snapshot is a frozen value built from the plain counters of channel_state (no locks,
taken on the loop's thread). Rates are per second since the broker was added; the periodic log
line (metrics_log_interval_ms) also gives the rate over the last interval.
"""

from __future__ import annotations

import attrs

from .channel_state import BrokerCounters

__all__ = ["BrokerMetrics", "ChannelMetrics"]


@attrs.frozen
class BrokerMetrics:
    """One broker's gauge, timer and counters."""

    broker_id: int
    queue_size: int  # QueueSize: queued items, the one being sent not counted
    request_count: int  # RequestRateAndQueueTimeMs count: items taken off the queue
    request_rate: float  # items taken per second since the broker was added
    queue_time_mean_ms: float
    queue_time_max_ms: float
    tries: int
    answered: int
    retries: int
    dropped: int
    bytes_sent: int
    bytes_received: int

    @classmethod
    def of(cls, broker_id: int, queue_size: int, counters: BrokerCounters, elapsed_s: float) -> BrokerMetrics:
        c = counters
        return cls(
            broker_id=broker_id,
            queue_size=queue_size,
            request_count=c.dequeued,
            request_rate=c.dequeued / elapsed_s if elapsed_s > 0 else 0.0,
            queue_time_mean_ms=c.queue_time_total_ms / c.dequeued if c.dequeued else 0.0,
            queue_time_max_ms=c.queue_time_max_ms,
            tries=c.tries,
            answered=c.answered,
            retries=c.retries,
            dropped=c.dropped,
            bytes_sent=c.bytes_sent,
            bytes_received=c.bytes_received,
        )

    def log_text(self, interval_rate: float | None = None) -> str:
        rate = "" if interval_rate is None else f" last-interval-rate={interval_rate:.1f}/s"
        return (
            f"broker-id={self.broker_id} QueueSize={self.queue_size} RequestRateAndQueueTimeMs("
            f"count={self.request_count} mean-rate={self.request_rate:.1f}/s{rate} "
            f"mean={self.queue_time_mean_ms:.3f} max={self.queue_time_max_ms:.3f}) tries={self.tries} "
            f"answered={self.answered} retries={self.retries} dropped={self.dropped} "
            f"bytes-sent={self.bytes_sent} bytes-received={self.bytes_received}"
        )


@attrs.frozen
class ChannelMetrics:
    """All brokers' metrics; total_queue_size is Kafka's TotalQueueSize gauge."""

    brokers: tuple[BrokerMetrics, ...]

    @property
    def total_queue_size(self) -> int:
        return sum(b.queue_size for b in self.brokers)

    def broker(self, broker_id: int) -> BrokerMetrics:
        for b in self.brokers:
            if b.broker_id == broker_id:
                return b
        raise KeyError(f"no metrics for broker {broker_id}")
