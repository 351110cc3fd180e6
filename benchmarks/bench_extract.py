"""Extraction benchmark on RC_sample_1M.zst, against a baseline measured in the same run.

    .venv/bin/python benchmarks/bench_extract.py [--input FILE] [--workers 2] [--small-lines 100000]

Baseline: plain zstd decompression + orjson parsing of every line of the same file (one core): the floor
that any extraction must pay. Reported: comments/s of both, their ratio, peak memory of the whole
process tree (sampled from /proc), the same for a 100k-line prefix (memory must not grow with input
size), the funnel, and a run whose workers are started and loaded before it reads (its start-up apart
from its steady state, comments/s per worker). Results go to output/bench/bench.json, the candidates of
the whole file to output/bench/candidates/ (benchmarks/bench_prepare.py reads them). On the gold set's
source file the candidates are also judged by the Reddit gold set (data/eval): precision, yield, and
that none is unjudged. Each stage's own time is measured in one process on the prefix (shares) and on
the whole file (seconds, and what the stages before spaCy take of them). The whole file is extracted a
second time with the surface pre-filter off: the candidates must be the same; and, alternating with
the timed runs, without the validity score stage (the score may add at most 10%) and with the rules'
person detection (the default, the validity score, may take at most 10% longer).
Memory is the processes' proportional set size (PSS: what the tree takes, shared pages split), with the
resident size (RSS: shared pages counted in every process) beside it.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import orjson
import pyarrow.parquet as pq

from knowref60k.core.config import ExtractConfig
from knowref60k.core.console import make_console, render_funnel
from knowref60k.core.stats import PipelineStats
from knowref60k.extract.extractor import Extractor
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.pipeline import STAGES, CandidateExtractor
from knowref60k.extract.records import LineBatch
from knowref60k.extract.stages.split import Split
from knowref60k.ingest.readers import iter_line_chunks, open_input
from knowref60k.ingest.slicing import write_line_range
from knowref60k.quality.gold import gold_metadata, load_gold, score_candidates
from knowref60k.quality.scorer_data import UNSCORED_STAGES

# The rules' person detection, the yardstick of the default's cost.
RULES = ExtractConfig(person_detection="both")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
# Targets: the 1M sample within about 4x of the one-core read floor, and under 1 GB apart from the window.
TARGET_SECONDS = 15.0
TARGET_RATE = 66_000
TARGET_PEAK_BYTES = 1.5 * 1024**3
TARGET_PEAK_WITHOUT_WINDOW_BYTES = 1024**3
MIB = 1024**2
console = make_console()


def process_tree(pid: int) -> list[int]:
    """A process and all its descendants, from /proc."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
        found.append(current)
    return found


def memory_of(pid: int, file: str, field: str) -> int:
    try:
        text = Path(f"/proc/{pid}/{file}").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) * 1024 for line in text.splitlines() if line.startswith(field)), 0)


class PeakMemory:
    """Samples the memory of this process tree every 50 ms while active: the sum of the processes'
    resident sizes (RSS: pages shared between them, the libraries and the memory-mapped encoder, counted
    once per process) and of their proportional sizes (PSS: a shared page split between its sharers,
    what the tree takes from the machine)."""

    def __init__(self) -> None:
        self.peak = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            tree = process_tree(os.getpid())
            self.peak = max(self.peak, sum(memory_of(pid, "status", "VmRSS:") for pid in tree))
            self.peak_pss = max(self.peak_pss, sum(memory_of(pid, "smaps_rollup", "Pss:") for pid in tree))
            self._stop.wait(0.05)


@dataclass
class Baseline:
    lines: int
    seconds: float
    peak_rss_bytes: int
    peak_pss_bytes: int

    @property
    def rate(self) -> float:
        return self.lines / self.seconds


def baseline(path: Path) -> Baseline:
    """Plain decompress + orjson.loads of every line: its time, and its memory (mostly the zstd window)."""
    with PeakMemory() as memory:
        started = time.perf_counter()
        lines = 0
        with open_input(path) as (_raw, stream):
            for chunk in iter_line_chunks(stream, path.name):
                for line in chunk.data.splitlines():
                    orjson.loads(line)
                    lines += 1
        seconds = time.perf_counter() - started
    return Baseline(lines, seconds, memory.peak, memory.peak_pss)


@dataclass
class Run:
    file: str
    lines: int
    seconds: float
    peak_rss_bytes: int
    peak_pss_bytes: int
    candidates: int
    stats: PipelineStats

    @property
    def rate(self) -> float:
        return self.lines / self.seconds

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "lines": self.lines,
            "seconds": round(self.seconds, 2),
            "comments_per_second": round(self.rate),
            "peak_rss_mib": round(self.peak_rss_bytes / MIB),
            "peak_pss_mib": round(self.peak_pss_bytes / MIB),
            "candidates": self.candidates,
        }

    def describe(self) -> str:
        return (
            f"{self.lines:,} comments in {self.seconds:.1f} s = {self.rate:,.0f} comments/s, "
            f"peak PSS {self.peak_pss_bytes / MIB:,.0f} MiB (RSS {self.peak_rss_bytes / MIB:,.0f} MiB), "
            f"{self.candidates:,} candidates"
        )


def extract(
    path: Path, out: Path, workers: int, config: ExtractConfig | None = None, stages: Sequence[Any] = STAGES
) -> Run:
    with PeakMemory() as memory:
        started = time.perf_counter()
        with Extractor(config or ExtractConfig(), workers=workers, stages=stages) as extractor:
            report = extractor.extract_file(path, out)
        seconds = time.perf_counter() - started
    lines = report.stats["read"].total
    return Run(path.name, lines, seconds, memory.peak, memory.peak_pss, report.rows, report.stats)


@dataclass
class StartUp:
    """A run whose workers were started and loaded before the first chunk was read: the seconds until
    they were ready, then the seconds of the file through them (the steady state)."""

    start_up_seconds: float
    steady_seconds: float
    lines: int
    workers: int

    @property
    def steady_rate(self) -> float:
        return self.lines / self.steady_seconds

    def to_dict(self) -> dict[str, object]:
        return {
            "start_up_seconds": round(self.start_up_seconds, 2),
            "steady_seconds": round(self.steady_seconds, 2),
            "steady_comments_per_second": round(self.steady_rate),
            "steady_comments_per_second_per_worker": round(self.steady_rate / self.workers),
        }

    def describe(self) -> str:
        return (
            f"start-up {self.start_up_seconds:.1f} s (workers started, models loaded), then steady state "
            f"{self.steady_seconds:.1f} s = {self.steady_rate:,.0f} comments/s, "
            f"{self.steady_rate / self.workers:,.0f} per worker"
        )


def start_up_apart(path: Path, out: Path, workers: int) -> StartUp:
    """The default extraction of `path` with its start-up timed apart from the rest."""
    started = time.perf_counter()
    with Extractor(ExtractConfig(), workers=workers) as extractor:
        extractor.start()
        ready = time.perf_counter()
        report = extractor.extract_file(path, out)
        done = time.perf_counter()
    return StartUp(ready - started, done - ready, report.stats["read"].total, workers)


class TimedIterator:
    """Counts the seconds spent getting items from an iterator."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = iter(items)
        self.seconds = 0.0

    def __iter__(self) -> TimedIterator:
        return self

    def __next__(self) -> Any:
        started = time.perf_counter()
        try:
            return next(self.items)
        finally:
            self.seconds += time.perf_counter() - started


def stage_seconds(path: Path, lines: int) -> dict[str, float]:
    """Own seconds of each extraction stage on the file's first `lines` lines, in this process: the time
    spent pulling a stage's output, less the time it spent pulling its input."""
    extractor = CandidateExtractor(ExtractConfig(), resolve_model_name(None))
    own: dict[str, float] = {stage.name: 0.0 for stage in STAGES}
    with open_input(path) as (_raw, stream):
        done = 0
        for chunk in iter_line_chunks(stream, path.name):
            stages = [stage(extractor.context) for stage in STAGES]
            timed = [TimedIterator([LineBatch("ndjson", chunk)])]
            for stage in stages:
                timed.append(TimedIterator(stage.run(timed[-1])))
            with extractor.pipeline.chunk_zone():  # as in a worker: spaCy's memory zone costs time too
                for _ in timed[-1]:
                    pass
            for stage, upstream, output in zip(stages, timed[:-1], timed[1:], strict=True):
                own[stage.name] += output.seconds - upstream.seconds
            done += chunk.data.count(b"\n")
            if done >= lines:
                break
    return own


def profile(path: Path, out: Path) -> None:
    """Where the time goes: cProfile of a one-process extraction."""
    profiler = cProfile.Profile()
    profiler.enable()
    with Extractor(ExtractConfig(), workers=1) as extractor:
        extractor.extract_file(path, out)
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--small-lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the whole file (best and median)")
    parser.add_argument("--profile", action="store_true", help="also profile a one-process run on the prefix")
    parser.add_argument("--out", type=Path, default=REPO / "output" / "bench")
    return parser.parse_args()


def best(runs: Sequence[Run]) -> Run:
    return min(runs, key=lambda run: run.seconds)


@dataclass
class Measured:
    """Everything one benchmark run measured: the baselines, the runs of each configuration, whether the
    pre-filter changed the candidates, the stages' shares of time and the gold set's verdict."""

    base: Baseline
    small_base: Baseline
    small: Run
    runs: list[Run]
    unscored_runs: list[Run]
    rules_runs: list[Run]
    unfiltered: Run
    same: bool
    shares: dict[str, float]
    whole_file_seconds: dict[str, float]
    quality: dict[str, Any] | None
    start_up: StartUp

    @property
    def full(self) -> Run:
        return best(self.runs)

    @property
    def unscored(self) -> Run:
        return best(self.unscored_runs)

    @property
    def rules(self) -> Run:
        return best(self.rules_runs)


def timed_runs(args: argparse.Namespace, work: Path, candidates_dir: Path) -> tuple[list[Run], ...]:
    """The whole file by the default, without the score and by the rules, alternated, so that a slow
    spell of the machine hits all three."""
    runs: tuple[list[Run], ...] = ([], [], [])
    for _ in range(args.repeat):
        shutil.rmtree(candidates_dir, ignore_errors=True)  # measure a real run, not a skip
        runs[0].append(extract(args.input, candidates_dir, args.workers))
        shutil.rmtree(work / "unscored", ignore_errors=True)
        runs[1].append(extract(args.input, work / "unscored", args.workers, stages=UNSCORED_STAGES))
        shutil.rmtree(work / "rules", ignore_errors=True)
        runs[2].append(extract(args.input, work / "rules", args.workers, RULES))
    return runs


def measure(args: argparse.Namespace) -> Measured:
    candidates_dir = args.out / "candidates"
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        console.print(f"baseline: decompress + orjson.loads of {args.input.name} ...")
        base = baseline(args.input)
        prefix = work / f"RC_prefix_{args.small_lines}.zst"
        write_line_range(args.input, prefix, 0, args.small_lines)
        small_base = baseline(prefix)
        console.print(f"extraction of a {args.small_lines:,}-line prefix with {args.workers} workers ...")
        small = extract(prefix, work / "small", args.workers)
        console.print(f"extraction of {args.input.name} with {args.workers} workers ...")
        runs, unscored_runs, rules_runs = timed_runs(args, work, candidates_dir)
        console.print(f"extraction of {args.input.name} without the surface pre-filter ...")
        unfiltered = extract(
            args.input, work / "unfiltered", args.workers, ExtractConfig(surface_prefilter=False)
        )
        console.print(f"extraction of {args.input.name} with its workers started first ...")
        start_up = start_up_apart(args.input, work / "started", args.workers)
        candidates = rows_of(candidates_dir)
        same = candidates == rows_of(work / "unfiltered")
        console.print(f"time per stage on the {args.small_lines:,}-line prefix, one process ...")
        shares = stage_seconds(prefix, args.small_lines)
        console.print(f"time per stage on all of {args.input.name}, one process ...")
        whole_file_seconds = stage_seconds(args.input, base.lines)
        if args.profile:
            profile(prefix, work / "profile")
    quality = gold_check(args.input, candidates)
    return Measured(
        base,
        small_base,
        small,
        runs,
        unscored_runs,
        rules_runs,
        unfiltered,
        same,
        shares,
        whole_file_seconds,
        quality,
        start_up,
    )


def results_of(args: argparse.Namespace, measured: Measured) -> dict[str, Any]:
    base, small_base, full = measured.base, measured.small_base, measured.full
    unscored, rules = measured.unscored, measured.rules
    results = {
        "input": str(args.input),
        "workers": args.workers,
        "cores": os.cpu_count(),
        "baseline": {
            "lines": base.lines,
            "seconds": round(base.seconds, 2),
            "comments_per_second": round(base.rate),
            "peak_rss_mib": round(base.peak_rss_bytes / MIB),
            "peak_pss_mib": round(base.peak_pss_bytes / MIB),
            "prefix_peak_rss_mib": round(small_base.peak_rss_bytes / MIB),
            "prefix_peak_pss_mib": round(small_base.peak_pss_bytes / MIB),
        },
        "prefix": measured.small.to_dict(),
        "full": full.to_dict(),
        "full_runs_seconds": [round(run.seconds, 2) for run in measured.runs],
        "full_median_seconds": round(median(run.seconds for run in measured.runs), 2),
        "start_up_apart": measured.start_up.to_dict(),
        "stage_seconds_on_prefix": {name: round(seconds, 2) for name, seconds in measured.shares.items()},
        "stage_seconds_whole_file": {
            name: round(seconds, 2) for name, seconds in measured.whole_file_seconds.items()
        },
        "ratio_extract_to_baseline": round(full.rate / base.rate, 3),
        "without_surface_prefilter": {**measured.unfiltered.to_dict(), "same_candidates": measured.same},
        "without_validity_score": {
            **unscored.to_dict(),
            "runs_seconds": [round(run.seconds, 2) for run in measured.unscored_runs],
            "ratio_with_score": round(full.seconds / unscored.seconds, 3),
        },
        "rules_before_issue_37": {
            **rules.to_dict(),
            "runs_seconds": [round(run.seconds, 2) for run in measured.rules_runs],
            "ratio_default_to_rules": round(full.seconds / rules.seconds, 3),
        },
        "funnel": full.stats.to_dict(),
    }
    if measured.quality is not None:
        results["reddit_gold"] = measured.quality
    return results


def report(args: argparse.Namespace, measured: Measured) -> None:
    base, small_base, full = measured.base, measured.small_base, measured.full
    console.print(render_funnel(full.stats, f"Funnel on {full.file}"))
    console.print(
        f"baseline (decompress + JSON parse, 1 core): {base.rate:,.0f} comments/s ({base.seconds:.1f} s), "
        f"peak PSS {base.peak_pss_bytes / MIB:,.0f} MiB "
        f"({small_base.peak_pss_bytes / MIB:,.0f} MiB on the prefix)"
    )
    console.print(f"extraction, {args.small_lines:,}-line prefix: {measured.small.describe()}")
    runs = measured.runs
    console.print(f"extraction, whole file, best of {len(runs)}: {full.describe()}")
    median_seconds = median(run.seconds for run in runs)
    listed = ", ".join(f"{run.seconds:.1f} s" for run in runs)
    console.print(
        f"whole file, median of {len(runs)}: {median_seconds:.1f} s = "
        f"{full.lines / median_seconds:,.0f} comments/s (runs: {listed})"
    )
    console.print(f"whole file, workers started first: {measured.start_up.describe()}")
    total = sum(measured.shares.values())
    console.print(
        "share of time per stage (one process, prefix): "
        + ", ".join(f"{name} {seconds / total:.0%}" for name, seconds in measured.shares.items())
    )
    report_whole_file_stages(measured.whole_file_seconds)
    window = base.peak_pss_bytes - small_base.peak_pss_bytes
    own = full.peak_pss_bytes - base.peak_pss_bytes
    console.print(
        f"zstd decoder window (baseline, prefix to whole file): {window / MIB:,.0f} MiB; "
        f"extraction's own peak without the baseline: {own / MIB:,.0f} MiB"
    )
    console.print(f"ratio extraction / baseline: {full.rate / base.rate:.3f}")
    report_comparisons(measured)


def report_whole_file_stages(seconds: dict[str, float]) -> None:
    """Each stage's own seconds on the whole file in one process, and how they split at spaCy: what a
    front end (read to surface) costs against what the stages after it cost."""
    names = list(seconds)
    front = sum(seconds[name] for name in names[: names.index(Split.name)])
    console.print(
        "seconds per stage (one process, whole file): "
        + ", ".join(f"{name} {value:.2f}" for name, value in seconds.items())
        + f"; before spaCy (read to surface) {front:.1f} s of {sum(seconds.values()):.1f} s"
    )


def report_comparisons(measured: Measured) -> None:
    full, unfiltered, unscored, rules = measured.full, measured.unfiltered, measured.unscored, measured.rules
    console.print(
        f"without the surface pre-filter: {unfiltered.describe()}; "
        f"speed-up from the pre-filter {unfiltered.seconds / full.seconds:.2f}x"
    )
    console.print(
        f"without the validity score (best of {len(measured.unscored_runs)}): {unscored.describe()}; with it "
        f"{full.seconds / unscored.seconds:.3f}x the time"
    )
    console.print(
        "the rules (person detection both; "
        f"best of {len(measured.rules_runs)}): {rules.describe()}; "
        f"the default {full.seconds / rules.seconds:.3f}x its time"
    )
    quality = measured.quality
    if quality is not None:
        console.print(
            f"judged by the Reddit gold set (data/eval): {quality['correct']} of {quality['candidates']} "
            f"candidates correct ({quality['precision']:.1%}), {quality['valid_per_million_comments']} per "
            f"million comments; errors {quality['errors']}"
        )


def checks_of(measured: Measured) -> list[tuple[str, bool, str]]:
    full, unscored, rules = measured.full, measured.unscored, measured.rules
    checks = targets(measured.small, full, measured.small_base, measured.base)
    checks += [
        (
            "the default (score) within 10% of the rules' time",
            full.seconds <= 1.10 * rules.seconds,
            f"{full.seconds / rules.seconds - 1:+.1%}",
        ),
        (
            "the validity score adds at most 10%",
            full.seconds <= 1.10 * unscored.seconds,
            f"{full.seconds / unscored.seconds - 1:+.1%}",
        ),
        (
            "same candidates with the surface pre-filter on and off",
            measured.same,
            "identical" if measured.same else "DIFFERENT",
        ),
    ]
    if measured.quality is not None:
        unjudged = measured.quality["unjudged"]
        checks.append(("every candidate is in the gold set", not unjudged, f"{unjudged} unjudged"))
    return checks


def main() -> int:
    args = arguments()
    if not args.input.is_file():
        console.print(
            f"benchmark input missing: {args.input} (expected ../shared beside the repo)", style="red"
        )
        return 2
    measured = measure(args)
    args.out.mkdir(parents=True, exist_ok=True)
    results = results_of(args, measured)
    (args.out / "bench.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    report(args, measured)
    missed = 0
    for name, met, value in checks_of(measured):
        console.print(f"{'MET   ' if met else 'MISSED'} {name}: {value}")
        missed += not met
    console.print(f"Results in {(args.out / 'bench.json').resolve()}")
    if missed:
        console.print(f"{missed} target(s) missed", style="red")
    return 1 if missed else 0


def rows_of(folder: Path) -> list[dict[str, object]]:
    return [
        row for path in sorted(folder.glob("*.candidates.parquet")) for row in pq.read_table(path).to_pylist()
    ]


def gold_check(source: Path, candidates: list[dict[str, object]]) -> dict[str, object] | None:
    """The run's candidates judged by the gold set, when the input is a file the gold set came from."""
    comments = gold_metadata()["sources"].get(source.name)
    if comments is None:
        return None
    return score_candidates(candidates, load_gold(), comments)


def targets(small: Run, full: Run, small_base: Baseline, base: Baseline) -> list[tuple[str, bool, str]]:
    """The targets, on the memory the process tree takes (PSS; RSS, which counts every shared page
    once per process, alongside). The zstd decoder must keep a window of up to 2 GiB (window log 31), so
    its memory grows with the decompressed size until then; flatness is judged on the rest."""
    own_small = small.peak_pss_bytes - small_base.peak_pss_bytes
    own_full = full.peak_pss_bytes - base.peak_pss_bytes
    window = base.peak_pss_bytes - small_base.peak_pss_bytes
    without_window = full.peak_pss_bytes - window
    without_window_rss = full.peak_rss_bytes - (base.peak_rss_bytes - small_base.peak_rss_bytes)
    return [
        (f"whole file in <= {TARGET_SECONDS:.0f} s", full.seconds <= TARGET_SECONDS, f"{full.seconds:.1f} s"),
        (f"rate >= {TARGET_RATE / 1000:.0f}k comments/s", full.rate >= TARGET_RATE, f"{full.rate:,.0f}/s"),
        (
            "peak memory < 1.5 GB",
            full.peak_pss_bytes < TARGET_PEAK_BYTES,
            f"{full.peak_pss_bytes / MIB:,.0f} MiB (RSS {full.peak_rss_bytes / MIB:,.0f} MiB)",
        ),
        (
            "peak memory apart from the zstd window < 1 GB",
            without_window < TARGET_PEAK_WITHOUT_WINDOW_BYTES,
            f"{without_window / MIB:,.0f} MiB (RSS {without_window_rss / MIB:,.0f} MiB)",
        ),
        (
            "memory flat without the zstd window: 1M within 10% of 100k",
            own_full <= 1.10 * own_small,
            f"{own_full / MIB:,.0f} MiB vs {own_small / MIB:,.0f} MiB "
            f"(with the window: {full.peak_pss_bytes / MIB:,.0f} vs {small.peak_pss_bytes / MIB:,.0f} MiB)",
        ),
    ]


if __name__ == "__main__":
    sys.exit(main())
