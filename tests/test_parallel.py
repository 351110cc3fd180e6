"""The worker pool: results in input order, and each worker's garbage collector tuned once it is built."""

from __future__ import annotations

import gc
import os

import pytest

from knowref60k.core.parallel import YOUNG_GENERATION_THRESHOLD, WorkerPool


class Probe:
    """A worker that holds some long-lived objects, as a loaded model does."""

    def __init__(self) -> None:
        self.kept = [{"entry": index} for index in range(1_000)]

    def describe(self, task: int) -> tuple[int, int, int, int]:
        return task, os.getpid(), gc.get_threshold()[0], gc.get_freeze_count()


def test_workers_return_results_in_order_with_their_collector_settled() -> None:
    with WorkerPool(2, Probe) as pool:
        results = list(pool.map("describe", ((task,) for task in range(20))))
    assert [result[0] for result in results] == list(range(20))
    assert os.getpid() not in {result[1] for result in results}
    assert {result[2] for result in results} == {YOUNG_GENERATION_THRESHOLD}
    # What the worker process held once built (its modules and the Probe) was frozen out of the scans.
    assert min(result[3] for result in results) >= 1_000


def test_start_returns_once_every_worker_is_built_and_the_tasks_then_find_them_built() -> None:
    with WorkerPool(3, Probe) as pool:
        assert pool.start() == 3
        started = {pid for _, pid, _, _ in pool.map("describe", ((task,) for task in range(30)))}
    # The three processes start() waited for ran every task: none was started later.
    assert len(started) <= 3 and os.getpid() not in started
    single = WorkerPool(1, Probe)
    assert single.start() == 1 and isinstance(single.local_worker(), Probe)


def test_a_single_worker_runs_here_and_leaves_this_process_collector_alone() -> None:
    threshold = gc.get_threshold()
    with WorkerPool(1, Probe) as pool:
        (result,) = pool.map("describe", [(7,)])
    assert result[:2] == (7, os.getpid())
    assert gc.get_threshold() == threshold


def test_a_single_worker_is_built_once_on_first_use() -> None:
    pool = WorkerPool(1, Probe)
    worker = pool.local_worker()
    assert isinstance(worker, Probe)
    assert pool.local_worker() is worker
    ((task, pid, _, _),) = pool.map("describe", [(3,)])
    assert (task, pid) == (3, os.getpid())


def test_a_pool_of_processes_has_no_local_worker() -> None:
    with pytest.raises(ValueError, match="2 workers"):
        WorkerPool(2, Probe).local_worker()
