"""A pool of worker processes, each holding one object built once (a loaded spaCy model, say), whose
method is applied to a stream of tasks with the results returned in input order.

Interrupts belong to the parent: workers start with Ctrl-C (SIGINT) blocked and then ignore it, so a
Ctrl-C prints no traceback per worker; the parent's KeyboardInterrupt (or SIGTERM, which the command
line turns into one) closes the pool, which then terminates the workers at once instead of waiting for
their tasks.

A worker also ends when its parent dies, however it died: a SIGKILL (the OOM killer, `kill -9`) gives
the parent no chance to stop its workers, and a worker blocked on the task queue would otherwise wait
for ever, re-parented, holding its model (some 430 MB each). Once every worker is gone, multiprocessing's
resource tracker reads the end of its pipe and ends too.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from types import TracebackType
from typing import Any

from knowref60k.core.errors import UserError

logger = logging.getLogger(__name__)
_worker: Any = None
# More worker processes than this is a slip of the keyboard, not a machine; far more would not even fit
# the C int a pool's semaphore holds (an OverflowError deep in multiprocessing).
MOST_WORKERS = 1024
# Container objects allocated (net) between two collections of the youngest generation; Python's default
# is 700. A worker makes and drops several objects per input line.
YOUNG_GENERATION_THRESHOLD = 50_000
# How often a worker checks that its parent lives: the longest an orphaned worker lingers.
PARENT_CHECK_SECONDS = 0.5
# The exit status of a worker that ended because its parent had died.
ORPHANED_EXIT = 3
# How long a worker that is ready keeps the task that asks so (`WorkerPool.start`).
READY_PAUSE_SECONDS = 0.05


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, which a container or taskset narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(requested: int, option: str = "--workers") -> int:
    """The worker processes to start when `requested` are asked for: fewer than 1 or more than
    MOST_WORKERS is a UserError; more than the CPU cores are capped at the cores, with a warning. Every
    worker holds its own spaCy model (about 400 MB), so a worker beyond the cores adds memory and no
    speed: 24 workers on 2 cores took 10 GB."""
    if not 1 <= requested <= MOST_WORKERS:
        raise UserError(f"{option} must be a whole number from 1 to {MOST_WORKERS}, not {requested}")
    cores = usable_cores()
    if requested > cores:
        logger.warning(
            "%s %d is more than the %d CPU cores here: starting %d", option, requested, cores, cores
        )
        return cores
    return requested


def _build_worker(parent: int, factory: Callable[..., Any], *args: Any) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent(parent)  # before the model loads: the parent may die while it does
    _worker = factory(*args)
    settle_garbage_collector()


def end_with_parent(parent: int, interval: float = PARENT_CHECK_SECONDS) -> threading.Thread:
    """End this process as soon as `parent` (the pid of the process that started it) is no longer its
    parent: a daemon thread polls `os.getppid()`, which becomes another pid (1, or a subreaper) when the
    parent dies. Polling rather than Linux's PR_SET_PDEATHSIG, which fires when the parent *thread* that
    started the worker ends: the pool starts workers from whichever thread submits first (a Prefect task
    runs in a thread of its own), and a worker must outlive that thread."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        # os._exit, not sys.exit: at once, from this thread, without cleanup that would wait on the pool's
        # queues (whose other end died with the parent).
        os._exit(ORPHANED_EXIT)

    watcher = threading.Thread(target=watch, name="end-with-parent", daemon=True)
    watcher.start()
    return watcher


def settle_garbage_collector() -> None:
    """Tune the garbage collector of a worker process once its long-lived object is built.

    What the worker keeps for life (a spaCy model, word lists) is frozen: the collector no longer scans
    it on every full collection. Collections of young objects run less often: the per-line objects die
    young without cycles, so reference counting frees them anyway. Together this saved about 7% of a
    worker's CPU time, measured side by side on the 1M sample.
    """
    gc.freeze()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])


def _call_worker(method: str, *task: Any) -> Any:
    return getattr(_worker, method)(*task)


def _ready_worker() -> int:
    """The pid of a worker whose object is built. It keeps its task a moment, for the other workers to
    take the others as soon as they are built."""
    time.sleep(READY_PAUSE_SECONDS)
    return os.getpid()


class WorkerPool:
    """`factory(*args)` once per worker process; `map` calls one of its methods on every task, in order,
    with at most two tasks per worker in flight (constant memory). One worker runs in this process.
    Use as a context manager."""

    def __init__(self, workers: int, factory: Callable[..., Any], *args: Any) -> None:
        self.workers = max(1, workers)
        self._factory = factory
        self._args = args
        self._pool: ProcessPoolExecutor | None = None
        self._local: Any = None

    def map(self, method: str, tasks: Iterable[tuple[Any, ...]]) -> Iterator[Any]:
        if self.workers == 1:
            bound = getattr(self.local_worker(), method)
            yield from (bound(*task) for task in tasks)
            return
        in_flight: deque[Future[Any]] = deque()
        for task in tasks:
            in_flight.append(self._submit(_call_worker, method, *task))
            if len(in_flight) >= 2 * self.workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()

    def start(self) -> int:
        """Start every worker and wait until each has built its object (loaded its model), so that what
        a run pays once can be told from what it pays per task; the number of workers ready."""
        if self.workers == 1:
            self.local_worker()
            return 1
        ready: set[int] = set()
        while len(ready) < self.workers:
            waiting = [self._submit(_ready_worker) for _ in range(self.workers - len(ready))]
            ready.update(future.result() for future in waiting)
        return len(ready)

    def _submit(self, function: Callable[..., Any], *arguments: Any) -> Future[Any]:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                # spawn, not fork: the parent may run threads (Prefect, progress bars, tantivy)
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_build_worker,
                initargs=(os.getpid(), self._factory, *self._args),
            )
        # A submit may start a worker process, which inherits a blocked SIGINT.
        starts = len(self._pool._processes or {}) < self.workers
        with _sigint_blocked() if starts else contextlib.nullcontext():
            return self._pool.submit(function, *arguments)

    def local_worker(self) -> Any:
        """The worker object of a one-worker pool, which lives in this process: built on first use."""
        if self.workers != 1:
            raise ValueError(f"a pool of {self.workers} workers has no worker in this process")
        if self._local is None:
            self._local = self._factory(*self._args)
        return self._local

    def close(self, abandon: bool = False) -> None:
        """Stop the workers once their tasks are done; `abandon` (after an error or an interrupt)
        terminates them at once."""
        if self._pool is None:
            return
        if abandon:
            # No public way to stop a ProcessPoolExecutor's workers before Python 3.14.
            for process in list((self._pool._processes or {}).values()):
                process.terminate()
        self._pool.shutdown(cancel_futures=True)
        self._pool = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close(abandon=error is not None)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread for the block, so that the processes it starts inherit it blocked
    (from their first instruction: a child's own handler comes too late for a Ctrl-C during its start).
    Blocked, not ignored: an ignored Ctrl-C that arrives while a worker starts (a spawn waits for the
    child to read its instructions, a second on a busy machine) would be lost to this process too,
    while a blocked one stays pending and reaches its handler when the block ends, or sooner through
    another thread. Only the main thread runs Python's signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
