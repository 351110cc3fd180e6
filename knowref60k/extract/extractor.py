"""Extraction over files: chunks of lines through the pipeline in worker processes, one Parquet file,
one quarantine file and one stats report per input."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from knowref60k.core.config import ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import CANDIDATE_SCHEMA, file_sha256, output_clashes
from knowref60k.core.names import NAMES_DIR
from knowref60k.core.parallel import WorkerPool
from knowref60k.core.paths import DATA_DIR, SCORER_DIR
from knowref60k.core.runner import FileReport, FileRun, RowSink
from knowref60k.core.stage import stage_modules
from knowref60k.core.stats import PipelineStats
from knowref60k.core.versioning import __version__, code_fingerprint, data_fingerprint
from knowref60k.extract.nlp import model_version, resolve_model_name
from knowref60k.extract.pipeline import STAGES, CandidateExtractor, ChunkResult, StageClass
from knowref60k.extract.scorer import share_span_encoder
from knowref60k.extract.stages.score import ValidityScore
from knowref60k.ingest.readers import (
    InputCheck,
    LineChunk,
    check_input,
    compression_of,
    detect_format,
    iter_line_chunks,
    open_input,
)

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
BOTS_DIR = DATA_DIR / "bots"


def output_stem(path: Path) -> str:
    """`RC_2005-12.zst` -> `RC_2005-12`; `comments.jsonl.gz` -> `comments`."""
    name = path.name
    if compression_of(path):
        name = name[: -len(path.suffix)]
    stem = Path(name)
    return stem.stem if stem.suffix.lower() in {".ndjson", ".jsonl", ".json", ".txt", ".text"} else name


def check_distinct_outputs(paths: Sequence[Path]) -> None:
    """Refuse inputs that would write the same output files (`a/RC_x.zst` and `b/RC_x.ndjson`, or one
    file given twice): the second would overwrite the first's candidates, and the funnel count it twice."""
    listed = output_clashes(paths, output_stem)
    if listed:
        raise UserError(
            f"inputs would write the same output files ({listed}); rename one, or extract them into "
            "different --out folders"
        )


def extraction_fingerprint(config: ExtractConfig, stages: Sequence[StageClass] = STAGES) -> str:
    """What extraction's outputs depend on: the settings and the spaCy pipeline (name and version), the
    code of the stages and all they import, and the data files they read (name lists, bots, the validity
    model). Outputs made under another fingerprint are redone, never reused."""
    model_name = resolve_model_name(config.model)
    return "-".join(
        (
            config.fingerprint(model_name, model_version(model_name)),
            code_fingerprint(__name__, *stage_modules(stages)),
            data_fingerprint(NAMES_DIR, BOTS_DIR, SCORER_DIR),
        )
    )


class Extractor:
    """Extraction over many files with one pool of worker processes (use as a context manager)."""

    def __init__(
        self,
        config: ExtractConfig,
        workers: int = 2,
        read_size: int = 4 << 20,
        stages: Sequence[StageClass] = STAGES,
    ) -> None:
        self.config = config
        self.workers = max(1, workers)
        self.read_size = read_size
        self.model_name = resolve_model_name(config.model)
        self.fingerprint = extraction_fingerprint(config, stages)
        if ValidityScore in stages:
            share_span_encoder()
        self._workers = WorkerPool(self.workers, CandidateExtractor, config, self.model_name, tuple(stages))

    def __enter__(self) -> Extractor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._workers.close(abandon=error is not None)

    def load_here(self) -> None:
        """Load the model and word lists now, in this process (a one-worker extractor), rather than with
        the first chunk."""
        self._workers.local_worker()

    def start(self) -> int:
        """Start the workers and wait until each has loaded its model and word lists (otherwise the first
        chunks wait for them); the number of workers ready."""
        return self._workers.start()

    def file_run(self, path: Path, out_dir: Path) -> FileRun:
        stem = output_stem(path)
        return FileRun(
            path,
            out_dir / f"{stem}.candidates.parquet",
            out_dir / f"{stem}.stats.json",
            self.fingerprint,
            "candidates",
            out_dir / f"{stem}.quarantine.jsonl",
            lock_path=out_dir / f".{stem}.lock",
        )

    def extract_file(
        self,
        path: Path,
        out_dir: Path,
        input_format: str = "auto",
        progress: ProgressCallback | None = None,
    ) -> FileReport:
        """Extract one file; a file already done with the same config and code is skipped. Another run
        writing the same outputs now is an OutputsBusy error, raised before any work."""
        check_input(path)
        input_format = detect_format(path, input_format)
        run = self.file_run(path, out_dir)
        with run.claimed():
            finished = run.finished()
            if finished is not None:
                log.info("%s: already extracted with this config (%s), skipped", path.name, self.fingerprint)
                return finished
            sink, fields = self._extract(run, input_format, progress)
            report = run.finish(sink, fields)
        log.info("%s: %d candidates in %.1f s", path.name, report.rows, report.seconds)
        return report

    def _extract(
        self, run: FileRun, input_format: str, progress: ProgressCallback | None
    ) -> tuple[RowSink, dict[str, Any]]:
        """The candidates of `run.source` written, and what its report records about the run."""
        path = run.source
        metadata = {"knowref60k.fingerprint": self.fingerprint, "knowref60k.model": self.model_name}
        size = path.stat().st_size
        check = InputCheck()
        with (
            run.writing(CANDIDATE_SCHEMA, metadata, PipelineStats()) as sink,
            open_input(path) as (raw, stream),
        ):
            chunks = check.watch(iter_line_chunks(stream, path.name, self.read_size))
            for result in self._results(path.name, input_format, chunks):
                sink.write(result.rows, result.quarantined)
                sink.stats.merge(result.stats)
                if progress:
                    progress(raw.tell(), size)
            completeness = check.report(stream)
            # Inside the block, which then checks that the source did not change: the sha256 is of the
            # bytes that were read.
            sha256 = file_sha256(path)
        if completeness["complete"].startswith("suspect"):
            log.warning("%s: %s", path.name, completeness["complete"])
        return sink, {
            "source_sha256": sha256,
            "model": self.model_name,
            "model_version": model_version(self.model_name),
            "code_version": __version__,
            "config": self.config.to_dict(),
            "input": completeness,
        }

    def _results(self, source: str, input_format: str, chunks: Iterable[LineChunk]) -> Iterator[ChunkResult]:
        """Chunk results in input order; at most two chunks per worker in flight (constant memory)."""
        results: Iterator[ChunkResult] = self._workers.map(
            "process", ((source, input_format, chunk) for chunk in chunks)
        )
        return results
