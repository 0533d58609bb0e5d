"""report.png: requests and bytes per broker over the history, so bursts show at a glance.

Rules of this module:
- Input is the requests/ Parquet directory, read column-wise in record batches (timestamp,
  broker, bytes only) in two streaming passes: the first finds the time range and the brokers,
  the second counts into a brokers x time-buckets grid with numpy. Memory is the grid, never
  the rows. The files are read one by one, a row group at a time, without reader threads
  (ParquetFile.iter_batches): pyarrow's dataset scanner, even with the least read-ahead, took
  99 MiB over the process's RSS for the 1M-record generated log's 633,384 rows and 122 MiB for
  the 3M-record log's 1,554,462; this reader takes 70 and 71 MiB.
- Drawing uses matplotlib's Agg backend (no display needed) and UTC times on the x axis.
- Any int64 timestamp is drawn. Bucket edges are computed with Python integers (exact; no
  float rounding or int64 overflow at the ends of the range) and brokers are found by binary
  search (a table indexed by broker id would cost memory in the id range: 16 GiB for ids 0 and
  2^31-1). A history well inside the years 1-9999 (what matplotlib can show as dates, with a
  margin for the axis and its ticks) gets a UTC date axis; any other gets an axis of seconds after its first timestamp, and says why.
- Three panels sharing the time axis: all brokers together (requests as bars, bytes as a
  line), then one heat map row per broker for requests and one for bytes.
- With ``kraft`` (broker -> (KRaft fetch bytes, ZooKeeper request bytes), summary.KRAFT_DEFINITION)
  a fourth panel below, in its own subfigure: the two byte counts side by side per broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ["BrokerTimeline", "broker_timeline", "draw_report"]

_COLUMNS = ["timestamp", "broker", "bytes"]


@attrs.frozen(slots=True)
class BrokerTimeline:
    """Requests and bytes per (broker, time bucket); ``edges_ms`` has one more entry than buckets."""

    brokers: tuple[int, ...]
    edges_ms: Any  # numpy int64 array
    requests: Any  # numpy int64 array [broker index, bucket]
    bytes: Any

    def __repr__(self) -> str:
        return f"BrokerTimeline({len(self.brokers)} brokers, {len(self.edges_ms) - 1} buckets)"


def _batches(requests_dir: Path) -> Any:
    """The three columns of every Parquet file of requests_dir in record batches, one file and one
    row group at a time, on this thread (see the rules)."""
    import pyarrow.parquet as pq

    files = sorted(p for p in requests_dir.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    for path in files:
        with pq.ParquetFile(str(path)) as parquet:
            yield from parquet.iter_batches(batch_size=1 << 16, columns=_COLUMNS, use_threads=False)


INT64_MAX = (1 << 63) - 1
DATE_MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z: matplotlib's first date
DATE_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: its last


def bucket_edges(lo: int, hi: int, bins: int) -> list[int]:
    """bins + 1 edges from lo to hi + 1, in exact integers that fit an int64: a history ending at
    INT64_MAX ends its last bucket there (the bucketing counts that value in the last bucket)."""
    hi = min(max(hi, lo + 1000), INT64_MAX - 1)  # a history shorter than a second gets a visible width
    lo = min(lo, hi - 1000)
    span = hi + 1 - lo
    return [lo + span * k // bins for k in range(bins + 1)]


def broker_timeline(requests_dir: Path, bins: int) -> BrokerTimeline:
    """Bucket the requests of ``requests_dir`` by broker and time (``bins`` equal time buckets)."""
    import numpy as np

    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    lo, hi, brokers = None, None, set()
    for batch in _batches(requests_dir):
        if batch.num_rows == 0:
            continue
        ts = batch.column(0).to_numpy()
        lo = int(ts.min()) if lo is None else min(lo, int(ts.min()))
        hi = int(ts.max()) if hi is None else max(hi, int(ts.max()))
        brokers.update(np.unique(batch.column(1).to_numpy()).tolist())
    ordered = tuple(sorted(int(b) for b in brokers))
    if lo is None or hi is None:
        empty = np.zeros((0, bins), dtype=np.int64)
        return BrokerTimeline((), np.zeros(bins + 1, dtype=np.int64), empty, empty.copy())
    edges = np.array(bucket_edges(lo, hi, bins), dtype=np.int64)
    ids = np.array(ordered, dtype=np.int64)
    requests = np.zeros(len(ordered) * bins, dtype=np.int64)
    sizes = np.zeros(len(ordered) * bins, dtype=np.int64)
    for batch in _batches(requests_dir):
        if batch.num_rows == 0:
            continue
        ts = batch.column(0).to_numpy().astype(np.int64)
        bucket = np.clip(np.searchsorted(edges, ts, side="right") - 1, 0, bins - 1)
        row = np.searchsorted(ids, batch.column(1).to_numpy().astype(np.int64))
        cell = row * bins + bucket
        requests += np.bincount(cell, minlength=requests.size)
        sizes += np.bincount(cell, weights=batch.column(2).to_numpy(), minlength=sizes.size).astype(np.int64)
    shape = (len(ordered), bins)
    return BrokerTimeline(ordered, edges, requests.reshape(shape), sizes.reshape(shape))


def _time_axis(edges_ms: Any, mdates: Any) -> tuple[Any, str | None]:
    """x positions of the edges, and None for a date axis or the label of a seconds axis."""
    import numpy as np

    first, last = int(edges_ms[0]), int(edges_ms[-1])
    margin = (last - first) // 10 + 86_400_000  # the axis and its ticks reach a little beyond the data
    if DATE_MIN_MS + margin <= first and last <= DATE_MAX_MS - margin:
        return mdates.date2num(edges_ms.astype("datetime64[ms]").astype("datetime64[us]").tolist()), None
    seconds = np.array([(int(e) - first) / 1000 for e in edges_ms], dtype=np.float64)
    label = (
        f"seconds after {first:,} ms since 1970-01-01 UTC (the history lies outside the years "
        "1-9999 that a date axis can show)"
    )
    return seconds, label


_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def _byte_unit(largest: int) -> tuple[int, str]:
    """The unit that shows ``largest`` as a number >= 1 (bytes below 1 KiB)."""
    return next(((scale, name) for scale, name in _UNITS if largest >= scale), (1, "bytes"))


def draw_report(
    timeline: BrokerTimeline, path: Path, *, title: str, kraft: Mapping[int, tuple[int, int]] | None = None
) -> None:
    """Write the three-panel PNG for ``timeline`` to ``path`` (four panels with ``kraft``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates
    import matplotlib.pyplot as plt
    import numpy as np

    mdates: Any = matplotlib.dates  # partly untyped
    fig = plt.figure(figsize=(13, 9 if kraft is None else 12), layout="constrained")
    panels: Any = fig
    if kraft is not None:
        panels, below = fig.subfigures(2, 1, height_ratios=[3.1, 1])  # type: ignore[misc]  # an array of two
        _draw_kraft(below.subplots(), kraft)
    axes = panels.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [1.1, 1, 1]})
    fig.suptitle(title, fontsize=13)
    if not timeline.brokers:
        for ax in axes:
            ax.axis("off")
        axes[1].text(0.5, 0.5, "no requests were delivered", ha="center", va="center", fontsize=14)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return
    x, seconds_label = _time_axis(timeline.edges_ms, mdates)
    total_req = timeline.requests.sum(axis=0)
    total_bytes = timeline.bytes.sum(axis=0)
    top = axes[0]
    top.bar(x[:-1], total_req, width=np.diff(x), align="edge", color="#4C72B0", label="requests")
    top.set_ylabel("requests (all brokers)")
    twin = top.twinx()
    centers = (x[:-1] + x[1:]) / 2
    scale, unit = _byte_unit(int(total_bytes.max()))
    twin.plot(centers, total_bytes / scale, color="#DD8452", linewidth=1.4, label=unit)
    twin.set_ylabel(f"{unit} (all brokers)")
    n_brokers = len(timeline.brokers)
    all_scale, all_unit = _byte_unit(int(total_bytes.sum()))
    top.set_title(
        f"{int(total_req.sum()):,} requests, {total_bytes.sum() / all_scale:,.2f} {all_unit} "
        f"to {n_brokers} broker{'s' if n_brokers != 1 else ''}",
        fontsize=10,
    )
    handles = top.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    top.legend(handles, ["requests", unit], loc="upper left", fontsize=9)
    n = len(timeline.brokers)
    extent = (x[0], x[-1], -0.5, n - 0.5)
    cell_scale, cell_unit = _byte_unit(int(timeline.bytes.max()))
    for ax, grid, label in (
        (axes[1], timeline.requests, "requests"),
        (axes[2], timeline.bytes / cell_scale, cell_unit),
    ):
        image = ax.imshow(
            np.ma.masked_equal(grid, 0), aspect="auto", origin="lower", extent=extent,
            interpolation="nearest", cmap="viridis",
        )
        ax.set_facecolor("#f2f2f2")
        ax.set_ylabel("broker")
        ticks = list(range(n)) if n <= 20 else list(range(0, n, max(1, n // 10)))
        ax.set_yticks(ticks, [str(timeline.brokers[i]) for i in ticks])
        fig.colorbar(image, ax=ax, label=f"{label} per broker per bucket", pad=0.01)
    bucket_s = (int(timeline.edges_ms[1]) - int(timeline.edges_ms[0])) / 1000
    axes[2].set_xlim(x[0], x[-1])
    if seconds_label is None:
        axes[2].set_xlabel(f"time (UTC), {len(x) - 1} buckets of {bucket_s:,.1f} s")
        locator = mdates.AutoDateLocator()
        axes[2].xaxis.set_major_locator(locator)
        axes[2].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    else:
        axes[2].set_xlabel(f"{seconds_label}, {len(x) - 1} buckets of {bucket_s:,.1f} s", fontsize=9)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _draw_kraft(ax: Any, kraft: Mapping[int, tuple[int, int]]) -> None:
    """Per broker: the metadata log bytes a KRaft broker fetched beside the ZooKeeper-mode request bytes."""
    import numpy as np

    brokers = sorted(kraft)
    if not brokers:
        ax.axis("off")
        return
    shown = brokers if len(brokers) <= 40 else brokers[:: max(1, len(brokers) // 40)]
    fetched = np.array([kraft[b][0] for b in shown], dtype=np.float64)
    requested = np.array([kraft[b][1] for b in shown], dtype=np.float64)
    scale, unit = _byte_unit(int(max(fetched.max(), requested.max(), 1)))
    x = np.arange(len(shown))
    ax.bar(x - 0.2, fetched / scale, width=0.4, color="#55A868", label="KRaft: metadata log fetched")
    ax.bar(x + 0.2, requested / scale, width=0.4, color="#4C72B0", label="ZooKeeper mode: controller requests")
    ax.set_xticks(x, [str(b) for b in shown])
    ax.set_xlabel("broker" + ("" if len(shown) == len(brokers) else f" ({len(shown)} of {len(brokers)})"))
    ax.set_ylabel(unit)
    ax.set_title("bytes per broker over the replayed span: KRaft beside ZooKeeper mode", fontsize=10)
    ax.legend(loc="upper right", fontsize=9)
