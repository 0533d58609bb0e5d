"""The replay's SparkSession: the settings that keep Spark quiet, local and in UTC, and workers that import ctrlbatch."""

from __future__ import annotations

from typing import Any

import pytest

from ctrlbatch.replay.spark_session import spark_session


def test_session_settings(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.driver.host") == "127.0.0.1"


def test_workers_import_ctrlbatch(spark: Any) -> None:
    def probe(_: int) -> str:
        import ctrlbatch.replay

        return ctrlbatch.replay.__name__

    assert set(spark.sparkContext.parallelize(range(4), 2).map(probe).collect()) == {"ctrlbatch.replay"}


def test_getorcreate_returns_the_running_session(spark: Any) -> None:
    assert spark_session("local[2]") is spark


@pytest.mark.parametrize("bad", ["", "   "])
def test_bad_master_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="master must be"):
        spark_session(bad)
