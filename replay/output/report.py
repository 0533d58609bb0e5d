"""report.png: requests and bytes over the history, per API and per broker, each burst named by its cause.

Rules of this module:
- Input is the requests/ Parquet directory, read column-wise in record batches in two streaming
  passes: the first finds the time range and the brokers, the second counts into grids with
  numpy (brokers x time buckets; APIs x time buckets) and keeps, per bucket, its biggest delta
  (by bytes) with that delta's cause (the rows' ``cause``, image/causes.py), its bytes per API and its
  requests. Memory is the grids and one delta per bucket, never the rows: a delta's rows are
  consecutive in a file (send order; a Spark unit's file holds whole deltas), so each delta is
  summed as its rows pass. The files are read one by one, a row group at a time, without reader
  threads (ParquetFile.iter_batches): pyarrow's dataset scanner, even with the least read-ahead,
  took 99 MiB over the process's RSS for the 1M-record generated log's 633,384 rows and 122 MiB
  for the 3M-record log's 1,554,462; this reader takes 70 and 71 MiB. pyarrow's allocator
  (mimalloc) keeps the pages freed by one row group for the next, and over many row groups
  kept 84 MiB at the 10M-record log's 6.3M rows (34 MiB at 1M): so the reader hands the freed
  pages back after every row group (``release_unused``): the reading's peak at 10M falls from
  154 to 101 MiB of RSS, for about 1 ms a row group. A file without the
  api_key, cause or delta_last_offset columns (an older output) is drawn without APIs and causes.
- Drawing uses matplotlib's Agg backend (no display needed) and UTC times on the x axis. The PNG
  is written at zlib level 1 (``PNG_COMPRESS_LEVEL``): 0.82 -> 0.69 s of CPU for the report of a
  1M-record replay (the report is drawn after the replay, while every other core idles), 276 ->
  294 KB.
- Any int64 timestamp is drawn. Bucket edges are computed with Python integers (exact; no
  float rounding or int64 overflow at the ends of the range) and brokers are found by binary
  search (a table indexed by broker id would cost memory in the id range: 16 GiB for ids 0 and
  2^31-1). A history well inside the years 1-9999 (what matplotlib can show as dates, with a
  margin for the axis and its ticks) gets a UTC date axis; any other gets an axis of seconds after its first timestamp, and says why.
- Panels sharing the time axis: all brokers together (requests as bars stacked by API, bytes as
  a line, the bursts numbered on it), then, with more than one broker, one heat map row per
  broker for requests and one for bytes: every broker is a row (the axis says how many and which
  are labelled); grey is a bucket in which the broker received no request. Request axes have
  whole-number ticks. Below: the numbered bursts (``burst_buckets``: the buckets with the most
  bytes, at least BURST_SHARE of the busiest, no two adjacent, at most MAX_BURSTS) with the
  delta that made each, its cause and its API. Legends sit outside the plotted area.
- With ``kraft`` (broker -> (NoOp batch bytes, metadata batch bytes, ZooKeeper request bytes),
  summary.KRAFT_DEFINITION) a last panel: every broker's ZooKeeper-mode request bytes as bars,
  beside the KRaft bytes each broker fetched, metadata batches alone and with the NoOp batches
  (lines: the same for every broker); a log scale when they differ more than LOG_SCALE_RATIO.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from ..image.causes import OTHER
from ..rows.rows import API_NAMES

__all__ = [
    "API_ORDER", "BiggestDeltas", "Burst", "BrokerTimeline", "broker_timeline", "burst_buckets", "burst_lines",
    "draw_report",
]

_REQUIRED = ["timestamp", "broker", "bytes"]
_OPTIONAL = ["api_key", "cause", "delta_last_offset"]
API_ORDER = (4, 6, 5)  # LeaderAndIsr, UpdateMetadata, StopReplica: stacked in this order
_API_COLORS = {4: "#4C72B0", 6: "#8172B3", 5: "#C44E52"}
MAX_BURSTS = 8
BURST_SHARE = 0.1  # a burst carries at least this share of the busiest bucket's bytes
LOG_SCALE_RATIO = 30  # the KRaft panel goes logarithmic when its largest bar or line is this many times its smallest
PNG_COMPRESS_LEVEL = 1  # zlib level of the PNG (module rules: the report is drawn while the other cores idle)
_NO_REQUEST = "#a6a6a6"  # heat map cells where a broker received nothing


@attrs.frozen(slots=True)
class Burst:
    """A delta, as the report keeps it: the biggest (by bytes) of its time bucket."""

    delta: int  # its last offset (the rows' delta_last_offset)
    timestamp: int
    cause: str
    bytes_by_api: tuple[int, ...]  # in API_ORDER
    requests: int

    @property
    def bytes(self) -> int:
        return sum(self.bytes_by_api)

    @property
    def api(self) -> int:
        """The API key that carried most of its bytes."""
        return max(zip(self.bytes_by_api, API_ORDER, strict=True))[1]


@attrs.frozen(slots=True)
class BrokerTimeline:
    """Requests and bytes per (broker, time bucket); ``edges_ms`` has one more entry than buckets.
    ``api_requests`` and ``api_bytes``: per (API in API_ORDER, bucket), None for an input
    without api_key; ``biggest``: per bucket its biggest delta (None: no delta, or an input
    without deltas)."""

    brokers: tuple[int, ...]
    edges_ms: Any  # numpy int64 array
    requests: Any  # numpy int64 array [broker index, bucket]
    bytes: Any
    api_requests: Any = None
    api_bytes: Any = None
    biggest: tuple[Burst | None, ...] = ()

    def __repr__(self) -> str:
        return f"BrokerTimeline({len(self.brokers)} brokers, {len(self.edges_ms) - 1} buckets)"


def _batches(requests_dir: Path, optional: bool) -> Iterator[tuple[Any, bool]]:
    """The columns the report reads of every Parquet file of requests_dir in record batches, one
    file and one row group at a time, on this thread (see the rules), each with whether it ends
    its file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pool = pa.default_memory_pool()
    files = sorted(p for p in requests_dir.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    for path in files:
        with pq.ParquetFile(str(path)) as parquet:
            names = set(parquet.schema_arrow.names)
            columns = _REQUIRED + [n for n in _OPTIONAL if optional and n in names]
            last = None
            for batch in parquet.iter_batches(batch_size=1 << 16, columns=columns, use_threads=False):
                if last is not None:
                    yield last, False
                    pool.release_unused()  # the row group before: its pages back (module rules)
                last = batch
            if last is not None:
                yield last, True
                pool.release_unused()


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


class BiggestDeltas:
    """Sums each delta's rows as they pass (consecutive within a file: see the rules) and keeps,
    per bucket, the biggest delta."""

    def __init__(self, bins: int) -> None:
        self.biggest: list[Burst | None] = [None] * bins
        self._open: tuple[int, int, int, str] | None = None  # delta, timestamp, bucket, cause
        self._bytes = [0] * len(API_ORDER)
        self._requests = 0

    def feed(self, delta: Any, ts: Any, bucket: Any, api: Any, size: Any, causes: Any) -> None:
        """One record batch's columns (numpy; api as indexes into API_ORDER; causes an Arrow array)."""
        import numpy as np

        if not len(delta):
            return
        starts = np.flatnonzero(np.r_[True, delta[1:] != delta[:-1]])
        per_api = [np.add.reduceat(np.where(api == k, size, 0), starts).tolist() for k in range(len(API_ORDER))]
        counts = np.diff(np.r_[starts, len(delta)]).tolist()
        cause = causes.take(starts).to_pylist() if causes is not None else [OTHER] * len(starts)
        for i, s in enumerate(starts.tolist()):
            d = int(delta[s])
            if self._open is None or self._open[0] != d:
                self.close()
                self._open = (d, int(ts[s]), int(bucket[s]), cause[i] or OTHER)
            for k in range(len(API_ORDER)):
                self._bytes[k] += per_api[k][i]
            self._requests += counts[i]

    def close(self) -> None:
        """The open delta is complete (a new delta starts, or its file ends)."""
        if self._open is None:
            return
        d, ts, bucket, cause = self._open
        burst = Burst(d, ts, cause, tuple(self._bytes), self._requests)
        best = self.biggest[bucket]
        if best is None or burst.bytes > best.bytes:
            self.biggest[bucket] = burst
        self._open = None
        self._bytes = [0] * len(API_ORDER)
        self._requests = 0


def broker_timeline(requests_dir: Path, bins: int) -> BrokerTimeline:
    """Bucket the requests of ``requests_dir`` by broker, API and time (``bins`` equal time buckets)."""
    import numpy as np

    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    lo, hi, brokers = None, None, set()
    for batch, _end in _batches(requests_dir, optional=False):
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
    n_api = len(API_ORDER)
    api_requests = np.zeros(n_api * bins, dtype=np.int64)
    api_bytes = np.zeros(n_api * bins, dtype=np.int64)
    api_index = np.full(max(API_ORDER) + 1, n_api, dtype=np.int64)  # another key: counted under none
    api_index[list(API_ORDER)] = np.arange(n_api)
    has_api = has_deltas = True
    deltas = BiggestDeltas(bins)
    for batch, end in _batches(requests_dir, optional=True):
        names = batch.schema.names
        if batch.num_rows:
            ts = batch.column(0).to_numpy().astype(np.int64)
            size = batch.column(2).to_numpy().astype(np.int64)
            bucket = np.clip(np.searchsorted(edges, ts, side="right") - 1, 0, bins - 1)
            row = np.searchsorted(ids, batch.column(1).to_numpy().astype(np.int64))
            cell = row * bins + bucket
            requests += np.bincount(cell, minlength=requests.size)
            sizes += np.bincount(cell, weights=size, minlength=sizes.size).astype(np.int64)
            if "api_key" in names:
                keys = batch.column("api_key").to_numpy().astype(np.int64)
                api = api_index[np.clip(keys, 0, len(api_index) - 1)]
                api[(keys < 0) | (keys >= len(api_index))] = n_api
                known = api < n_api
                at = api[known] * bins + bucket[known]
                api_requests += np.bincount(at, minlength=api_requests.size)
                api_bytes += np.bincount(at, weights=size[known], minlength=api_bytes.size).astype(np.int64)
                if "delta_last_offset" in names:
                    causes = batch.column("cause") if "cause" in names else None
                    deltas.feed(batch.column("delta_last_offset").to_numpy(), ts, bucket, api, size, causes)
                else:
                    has_deltas = False
            else:
                has_api = has_deltas = False
        if end:
            deltas.close()  # a delta never spans files
    shape = (len(ordered), bins)
    return BrokerTimeline(
        ordered, edges, requests.reshape(shape), sizes.reshape(shape),
        api_requests.reshape((n_api, bins)) if has_api else None,
        api_bytes.reshape((n_api, bins)) if has_api else None,
        tuple(deltas.biggest) if has_deltas else (),
    )


def burst_buckets(bucket_bytes: Any, limit: int = MAX_BURSTS, share: float = BURST_SHARE) -> list[int]:
    """The buckets the report numbers as bursts, in time order: the most bytes first, each at
    least ``share`` of the busiest bucket's and not next to one already taken, at most ``limit``."""
    import numpy as np

    values = np.asarray(bucket_bytes)
    if not values.size or values.max() <= 0:
        return []
    floor = share * float(values.max())
    chosen: list[int] = []
    for b in np.argsort(-values, kind="stable").tolist():
        if len(chosen) == limit or values[b] <= 0 or values[b] < floor:
            break
        if all(abs(b - c) > 1 for c in chosen):
            chosen.append(b)
    return sorted(chosen)


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


def _size(n: int) -> str:
    scale, unit = _byte_unit(n)
    return f"{n:,} bytes" if scale == 1 else f"{n / scale:,.1f} {unit}"


def _when(ms: int) -> str:
    """A timestamp as UTC, or as milliseconds where no date can show it."""
    if not DATE_MIN_MS < ms < DATE_MAX_MS:
        return f"{ms:,} ms"
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _ticks(n: int, most: int) -> tuple[list[int], str]:
    """Which of n items get a label, and how the axis says so."""
    if n <= most:
        return list(range(n)), f"all {n}" if n > 1 else ""
    step = -(-n // (most // 2))
    return list(range(0, n, step)), f"all {n}, every {step}th labelled"


def burst_lines(timeline: BrokerTimeline, chosen: list[int]) -> list[str]:
    """One line per numbered burst: when, the bucket's bytes and requests, and its biggest delta
    with the cause and the API that carried most of it."""
    total_bytes = timeline.bytes.sum(axis=0)
    total_req = timeline.requests.sum(axis=0)
    lines = []
    for n, b in enumerate(chosen, 1):
        head = f"{n}  {_size(int(total_bytes[b]))} in {int(total_req[b]):,} requests"
        best = timeline.biggest[b] if timeline.biggest else None
        if best is None:
            lines.append(f"{head}, from {_when(int(timeline.edges_ms[b]))}")
            continue
        api = best.api
        part = best.bytes_by_api[API_ORDER.index(api)]
        plural = "s" if best.requests != 1 else ""
        lines.append(
            f"{head} | delta {best.delta:,} at {_when(best.timestamp)}: {best.cause}; "
            f"{API_NAMES.get(api, api)} {_size(part)} of its {_size(best.bytes)} ({best.requests:,} request{plural})"
        )
    return lines


def draw_report(
    timeline: BrokerTimeline, path: Path, *, title: str, kraft: Mapping[int, tuple[int, int, int]] | None = None
) -> None:
    """Write the PNG for ``timeline`` to ``path`` (see the module rules)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    several = len(timeline.brokers) > 1
    chosen = burst_buckets(timeline.bytes.sum(axis=0)) if timeline.brokers else []
    lines = burst_lines(timeline, chosen)
    heights = [7.2 if several else 3.4, 0.45 + 0.2 * max(len(lines), 1)] + ([3.2] if kraft is not None else [])
    fig = plt.figure(figsize=(13, sum(heights) + 0.6), layout="constrained")
    parts: Any = fig.subfigures(len(heights), 1, height_ratios=heights)  # an array of subfigures
    fig.suptitle(title, fontsize=13)
    if kraft is not None:
        _draw_kraft(parts[2].subplots(), kraft)
    if not timeline.brokers:
        ax = parts[0].subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, "no requests were delivered", ha="center", va="center", fontsize=14)
        parts[1].subplots().axis("off")
    else:
        _draw_timeline(parts[0], timeline, chosen, several)
        _draw_bursts(parts[1].subplots(), lines)
    fig.savefig(path, dpi=100, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    plt.close(fig)


def _draw_bursts(ax: Any, lines: list[str]) -> None:
    ax.axis("off")
    text = "\n".join(lines) if lines else "no burst: no request was delivered"
    ax.set_title(f"bursts, numbered above (at most {MAX_BURSTS}: the buckets with the most bytes): each bucket's "
                 "biggest delta (time UTC), its cause from the delta's records, and the API that carried most of it",
                 fontsize=10, loc="left")
    ax.text(0, 1, text, va="top", ha="left", fontsize=9, family="monospace", transform=ax.transAxes)


def _draw_timeline(fig: Any, timeline: BrokerTimeline, chosen: list[int], several: bool) -> None:
    import matplotlib.dates
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    mdates: Any = matplotlib.dates  # partly untyped
    if several:
        axes = fig.subplots(3, 1, sharex=True, gridspec_kw={"height_ratios": [1.3, 1, 1]})
    else:
        axes = [fig.subplots()]
    x, seconds_label = _time_axis(timeline.edges_ms, mdates)
    total_req = timeline.requests.sum(axis=0)
    total_bytes = timeline.bytes.sum(axis=0)
    top = axes[0]
    width = np.diff(x)
    if timeline.api_requests is None:
        top.bar(x[:-1], total_req, width=width, align="edge", color="#4C72B0", label="requests")
    else:
        bottom = np.zeros(len(total_req), dtype=np.int64)
        for k, key in enumerate(API_ORDER):
            counts = timeline.api_requests[k]
            if counts.any():
                top.bar(x[:-1], counts, width=width, align="edge", bottom=bottom, color=_API_COLORS[key],
                        label=f"{API_NAMES[key]} requests")
                bottom = bottom + counts
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_ylabel("requests (all brokers)")
    twin = top.twinx()
    centers = (x[:-1] + x[1:]) / 2
    scale, unit = _byte_unit(int(total_bytes.max()))
    twin.plot(centers, total_bytes / scale, color="#DD8452", linewidth=1.4, label=f"{unit} (all brokers)")
    twin.set_ylabel(f"{unit} (all brokers)")
    twin.set_ylim(0, max(float(total_bytes.max()) / scale, 1e-9) * 1.22)  # room for the burst numbers
    for n, b in enumerate(chosen, 1):
        twin.annotate(str(n), (centers[b], total_bytes[b] / scale), xytext=(0, 5), textcoords="offset points",
                      ha="center", va="bottom", fontsize=8, fontweight="bold",
                      bbox={"boxstyle": "circle,pad=0.25", "fc": "white", "ec": "#DD8452"})
    handles = top.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    labels = top.get_legend_handles_labels()[1] + twin.get_legend_handles_labels()[1]
    top.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(labels), fontsize=9, frameon=False)
    n = len(timeline.brokers)
    all_scale, all_unit = _byte_unit(int(total_bytes.sum()))
    top.set_title(
        f"{int(total_req.sum()):,} requests, {total_bytes.sum() / all_scale:,.2f} {all_unit} "
        f"to {n} broker{'s' if n != 1 else ''}", fontsize=10, loc="right",
    )
    if several:
        _draw_heat_maps(fig, axes[1:], timeline, x)
    bottom_ax = axes[-1]
    bucket_s = (int(timeline.edges_ms[1]) - int(timeline.edges_ms[0])) / 1000
    bottom_ax.set_xlim(x[0], x[-1])
    if seconds_label is None:
        bottom_ax.set_xlabel(f"time (UTC), {len(x) - 1} buckets of {bucket_s:,.1f} s")
        locator = mdates.AutoDateLocator()
        bottom_ax.xaxis.set_major_locator(locator)
        bottom_ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    else:
        bottom_ax.set_xlabel(f"{seconds_label}, {len(x) - 1} buckets of {bucket_s:,.1f} s", fontsize=9)


def _draw_heat_maps(fig: Any, axes: Any, timeline: BrokerTimeline, x: Any) -> None:
    """One row per broker (every broker), requests then bytes; grey: no request in that bucket."""
    import matplotlib
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    n = len(timeline.brokers)
    extent = (x[0], x[-1], -0.5, n - 0.5)
    cell_scale, cell_unit = _byte_unit(int(timeline.bytes.max()))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=_NO_REQUEST)
    ticks, which = _ticks(n, 20)
    for ax, grid, label, whole in (
        (axes[0], timeline.requests, "requests", True),
        (axes[1], timeline.bytes / cell_scale, cell_unit, False),
    ):
        image = ax.imshow(np.ma.masked_equal(grid, 0), aspect="auto", origin="lower", extent=extent,
                          interpolation="none", cmap=cmap)
        ax.set_facecolor(_NO_REQUEST)
        ax.set_ylabel("broker")
        ax.set_yticks(ticks, [str(timeline.brokers[i]) for i in ticks])
        bar = fig.colorbar(image, ax=ax, label=f"{label} per broker per bucket", pad=0.01)
        if whole:
            bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"{label} to each broker ({which}); grey: the broker received no request in that bucket",
                     fontsize=9, loc="left")


def _draw_kraft(ax: Any, kraft: Mapping[int, tuple[int, int, int]]) -> None:
    """Per broker: the ZooKeeper-mode request bytes beside the metadata log bytes a KRaft broker
    fetched, metadata batches alone and with the NoOp batches."""
    import numpy as np

    brokers = sorted(kraft)
    if not brokers:
        ax.axis("off")
        return
    noop = np.array([kraft[b][0] for b in brokers], dtype=np.float64)
    metadata = np.array([kraft[b][1] for b in brokers], dtype=np.float64)
    requested = np.array([kraft[b][2] for b in brokers], dtype=np.float64)
    whole = metadata + noop
    scale, unit = _byte_unit(int(max(whole.max(), requested.max(), 1)))
    x = np.arange(len(brokers))
    ax.bar(x, requested / scale, width=0.7, color="#4C72B0", label="ZooKeeper mode: controller requests to the broker")
    reach = np.r_[x[0] - 0.5, x + 0.5]  # a line across every broker's slot
    same = bool((metadata == metadata[0]).all() and (noop == noop[0]).all())
    for values, style, label in (
        (metadata, "-", "KRaft: metadata batches fetched"),
        (whole, "--", "KRaft: all batches (metadata and NoOp)"),
    ):
        text = f"{label}, {_size(int(values[0]))} each" if same else label
        ax.stairs(values / scale, reach, color="#55A868", linestyle=style, linewidth=2, label=text, baseline=None)
    positive = [v for v in (*requested, *metadata, *whole) if v > 0]
    if positive and max(positive) > LOG_SCALE_RATIO * min(positive):
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / scale / 4, max(positive) / scale * 2)  # bars rise from below the smallest
        unit += ", log scale"
    ticks, which = _ticks(len(brokers), 40)
    ax.set_xticks(ticks, [str(brokers[i]) for i in ticks])
    ax.set_xlim(reach[0], reach[-1])
    ax.set_xlabel(f"broker ({which})" if which else "broker")
    ax.set_ylabel(unit)
    ax.set_title("bytes per broker over the replayed span: KRaft beside ZooKeeper mode", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
