"""The process's model pool (bench/cli/session.py): made with its cache setting, never changed after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from surfbench.bench.cli import session


@pytest.fixture(autouse=True)
def _no_pool() -> Iterator[None]:
    session.close_pool()
    yield
    session.close_pool()


def test_pool_is_reused_with_the_same_setting() -> None:
    first = session.model_pool(no_cache=False)
    assert first.cache is not None and session.model_pool(no_cache=False) is first


def test_no_cache_after_a_cached_cell_gets_a_pool_made_without_one() -> None:
    cached = session.model_pool(no_cache=False)
    uncached = session.model_pool(no_cache=True)
    assert uncached is not cached and uncached.cache is None and cached.cache is not None
    assert session.model_pool(no_cache=False) is uncached, "once without the cache, the run stays so"


def test_pool_cache_is_read_only() -> None:
    pool = session.model_pool(no_cache=True)
    with pytest.raises(AttributeError):
        pool.cache = None
