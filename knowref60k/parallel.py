"""Worker pools that return chunk results in input order with a bounded number in flight."""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

Result = TypeVar("Result")


def spawn_pool(workers: int, initializer: Callable[..., None], *initargs: Any) -> ProcessPoolExecutor:
    """Processes that each run `initializer` once (load a model there, not per task)."""
    return ProcessPoolExecutor(
        max_workers=workers,
        # spawn, not fork: the parent may run threads (Prefect, progress bars, tantivy)
        mp_context=multiprocessing.get_context("spawn"),
        initializer=initializer,
        initargs=initargs,
    )


def ordered_results(
    pool: ProcessPoolExecutor, function: Callable[..., Result], tasks: Iterable[tuple[Any, ...]], window: int
) -> Iterator[Result]:
    """`function(*task)` for every task, in order; at most `window` tasks in flight (constant memory)."""
    in_flight: deque[Future[Result]] = deque()
    for task in tasks:
        in_flight.append(pool.submit(function, *task))
        if len(in_flight) >= window:
            yield in_flight.popleft().result()
    while in_flight:
        yield in_flight.popleft().result()
