"""The kraft_metadata data source's default partition size (plan.unit_bytes_for): equal parts of
about MIN_UNIT bytes, at most PARTS_PER_LOG of them until a part would exceed MAX_UNIT."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.tables.plan import MAX_UNIT, MIN_CORE_UNIT, MIN_UNIT, PARTS_PER_LOG, unit_bytes_for


@given(st.integers(0, 1 << 42))
def test_the_default_unit_cuts_a_log_into_equal_parts_of_about_min_unit(total: int) -> None:
    unit = unit_bytes_for(total)
    assert 1 <= unit <= MAX_UNIT
    parts = max(1, -(-total // unit))  # the parts cuts() makes, one past every unit bytes
    wanted = min(PARTS_PER_LOG, max(1, -(-total // MIN_UNIT)))
    if unit < MAX_UNIT:
        assert parts == wanted
        assert total <= parts * unit < total + parts or total == 0  # equal parts (to a byte)
    else:
        assert parts >= PARTS_PER_LOG  # a log over PARTS_PER_LOG * MAX_UNIT bytes: more parts, none over MAX_UNIT
    if total >= MIN_UNIT:
        assert unit * 2 > MIN_UNIT  # never much smaller than MIN_UNIT: a task has a fixed cost


def test_the_default_units_of_some_sizes() -> None:
    assert unit_bytes_for(0) == 1 and unit_bytes_for(1000) == 1000  # one part
    assert unit_bytes_for(58 << 20) == -(-(58 << 20) // 4)  # the bench's 1M-record log: 4 equal parts
    assert unit_bytes_for(580 << 20) == -(-(580 << 20) // 16)
    assert unit_bytes_for(16 * MAX_UNIT + 1) == MAX_UNIT


@given(st.integers(0, 1 << 42), st.integers(1, 512))
def test_with_the_sessions_cores_every_core_reads_one_equal_part_per_wave(total: int, cores: int) -> None:
    unit = unit_bytes_for(total, cores)
    assert 1 <= unit <= MAX_UNIT
    parts = max(1, -(-total // unit))
    if total >= cores * MIN_CORE_UNIT:
        assert parts % cores == 0  # whole waves
        assert parts == cores * -(-total // (cores * MAX_UNIT))  # the fewest such parts
        assert total <= parts * unit < total + parts  # equal parts (to a byte)
    else:
        assert parts <= max(1, total // MIN_CORE_UNIT)  # a small log: no part under MIN_CORE_UNIT


def test_the_units_with_cores_of_some_sizes() -> None:
    assert unit_bytes_for(58 << 20, 2) == -(-(58 << 20) // 2)  # the bench's log on local[2]: one part per core
    assert unit_bytes_for(58 << 20, 8) == -(-(58 << 20) // 8)
    assert unit_bytes_for(200 << 20, 2) == -(-(200 << 20) // 4)  # 4 parts: none over MAX_UNIT
    assert unit_bytes_for(3 << 20, 8) == 1 << 20  # at least MIN_CORE_UNIT each
    assert unit_bytes_for(58 << 20, None) == unit_bytes_for(58 << 20)  # unknown cores: the default rule


def test_register_gives_the_data_source_the_sessions_parallelism() -> None:
    """register(spark) registers for_session's class, holding spark's default parallelism (or
    none when the session has no SparkContext, as on Spark Connect)."""
    from ctrlbatch.replay.tables import source
    from ctrlbatch.replay.tables.register import register

    class Registry:
        def __init__(self) -> None:
            self.registered: list[type] = []

        def register(self, cls: type) -> None:
            self.registered.append(cls)

    class Context:
        defaultParallelism = 3

    class Session:
        sparkContext = Context()
        dataSource = Registry()

    class Connect:
        dataSource = Registry()

        @property
        def sparkContext(self) -> None:
            raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED] sparkContext is not supported in Spark Connect")

    session, connect = Session(), Connect()
    register(session)  # type: ignore[arg-type]
    register(connect)  # type: ignore[arg-type]
    (cls,), (plain,) = session.dataSource.registered, connect.dataSource.registered
    assert issubclass(cls, source.KraftMetadataDataSource) and cls.cores == 3 and cls.name() == "kraft_metadata"
    assert plain is source.KraftMetadataDataSource and plain.cores is None
    reader = cls(options={"path": "/nowhere"}).reader(None)
    assert reader.cores == 3
    from pyspark import cloudpickle

    again = cloudpickle.loads(cloudpickle.dumps(cls))  # type: ignore[no-untyped-call]  # as Spark sends it
    assert again.cores == 3 and again.name() == "kraft_metadata"
