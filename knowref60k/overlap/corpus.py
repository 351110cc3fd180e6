"""Reference corpora for the overlap audit: text, JSONL or Reddit dumps read with the project's readers,
cleaned and split into sentences like extraction does, in worker processes, and added to an overlap
index in batches.

Each committed batch is recorded in `indexed.json` (lines done, counts), and its documents carry the
batch's key: an interrupted run deletes the batch it may have half-recorded and resumes after the last
recorded line, so no sentence is indexed twice or lost. A file whose size or mtime changed is replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from knowref60k.core.config import ExtractConfig
from knowref60k.core.io import source_identity, write_json_atomic, write_quarantine
from knowref60k.core.parallel import WorkerPool
from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stage import chain, collect_stats, empty_stats, quarantined_by
from knowref60k.core.stats import PipelineStats, StageStats
from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import LineBatch
from knowref60k.extract.stages.clean import Clean
from knowref60k.extract.stages.read import ReadLines
from knowref60k.extract.stages.split import Split
from knowref60k.ingest.readers import (
    READ_SIZE,
    LineChunk,
    check_input,
    detect_format,
    iter_line_chunks,
    open_input,
    skip_lines,
)
from knowref60k.overlap.index import OverlapIndex

log = logging.getLogger(__name__)

# The extraction stages that give the corpus its sentences; indexing counts as one more stage.
SENTENCE_STAGES: tuple[type[ExtractStage[Any, Any]], ...] = (ReadLines, Clean, Split)
PROGRESS_FILE = "indexed.json"


def _corpus_stats() -> PipelineStats:
    stats = empty_stats(SENTENCE_STAGES)
    stats.stages["index"] = StageStats("sentences")
    return stats


@dataclass
class SplitChunk:
    """The sentences of one chunk of lines, with what was dropped or quarantined on the way."""

    first_line: int
    last_line: int
    sentences: list[str]
    quarantined: list[QuarantinedLine]
    stats: PipelineStats


class SentenceSplitter:
    """Cleans and splits chunks of lines into sentences. Built once per worker: spaCy loads once."""

    def __init__(self, model_name: str) -> None:
        self.context = ExtractContext(ExtractConfig(), model_name)
        self.pipeline = self.context.pipeline

    def split_chunk(self, input_format: str, chunk: LineChunk) -> SplitChunk:
        with self.pipeline.chunk_zone():
            stages = [stage(self.context) for stage in SENTENCE_STAGES]
            sentences = [sentence.text for sentence in chain(stages, [LineBatch(input_format, chunk)])]
            quarantined = quarantined_by(stages)
            stats = collect_stats(stages, _corpus_stats())
            last_line = chunk.first_line + stats["read"].total - 1
            return SplitChunk(chunk.first_line, last_line, sentences, quarantined, stats)


@dataclass
class CorpusFileReport:
    """What indexing one corpus file did; `skipped` when it was already complete."""

    path: Path
    skipped: bool
    lines: int
    sentences: int
    indexed: int
    stats: PipelineStats = field(default_factory=_corpus_stats)


ProgressCallback = Callable[[int, int], None]


class CorpusIndexer:
    """Adds corpus files to an overlap index (use as a context manager: it owns a worker pool)."""

    def __init__(
        self,
        directory: Path,
        model_name: str,
        workers: int = 2,
        batch: int = 100_000,
        read_size: int = READ_SIZE,
    ) -> None:
        self.directory = directory
        self.read_size = read_size
        self.index = OverlapIndex(directory, create=True)
        self.model_name = model_name
        self.batch = batch
        self.progress_path = directory / PROGRESS_FILE
        self.progress: dict[str, Any] = (
            orjson.loads(self.progress_path.read_bytes()) if self.progress_path.exists() else {}
        )
        self._workers = WorkerPool(workers, SentenceSplitter, model_name)

    def __enter__(self) -> CorpusIndexer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._workers.close()

    def add_file(
        self, path: Path, input_format: str = "auto", progress: ProgressCallback | None = None
    ) -> CorpusFileReport:
        check_input(path)
        input_format = detect_format(path, input_format)
        source = str(path.resolve())
        state = self._state(path, source)
        if state["complete"]:
            return self._report(path, state, skipped=True)
        quarantine = self.directory / "quarantine" / f"{path.name}.jsonl"
        _keep_quarantined_lines(quarantine, state["lines"])
        size = path.stat().st_size
        with open_input(path) as (raw, stream):
            chunks = skip_lines(iter_line_chunks(stream, path.name, self.read_size), state["lines"])
            pending: list[SplitChunk] = []
            for result in self.split_chunks(input_format, chunks):
                pending.append(result)
                if sum(len(chunk.sentences) for chunk in pending) >= self.batch:
                    self._commit(source, state, pending, quarantine)
                    pending = []
                if progress:
                    progress(raw.tell(), size)
            self._commit(source, state, pending, quarantine)
        state["complete"] = True
        self._save(source, state)
        return self._report(path, state, skipped=False)

    def _state(self, path: Path, source: str) -> dict[str, Any]:
        """This file's recorded progress; a file that changed since is removed from the index first."""
        identity = {"name": path.name, **source_identity(path)}
        state = self.progress.get(source)
        if state is not None and state["identity"] == identity:
            return dict(state)
        if state is not None:
            log.info("%s changed since it was indexed: replacing its sentences", path.name)
            self.index.remove_source(source)
        return {"identity": identity, "lines": 0, "complete": False, "stats": _corpus_stats().to_dict()}

    def split_chunks(self, input_format: str, chunks: Iterable[LineChunk]) -> Iterator[SplitChunk]:
        """The chunks cleaned and split into sentences by the worker pool, in order."""
        results: Iterator[SplitChunk] = self._workers.map(
            "split_chunk", ((input_format, chunk) for chunk in chunks)
        )
        return results

    def _commit(
        self, source: str, state: dict[str, Any], pending: Sequence[SplitChunk], quarantine: Path
    ) -> None:
        """Index a batch, then record it: a crash in between re-does this batch (its key replaces it)."""
        if not pending:
            return
        stats = PipelineStats.from_dict(state["stats"])
        sentences = [sentence for chunk in pending for sentence in chunk.sentences]
        indexed = self.index.add(sentences, source=source, batch=f"{source}#{pending[0].first_line}")
        stats["index"].total += len(sentences)
        stats["index"].forwarded += indexed
        stats["index"].drop("no_words", len(sentences) - indexed)
        for chunk in pending:
            stats.merge(chunk.stats)
        lines = [line for chunk in pending for line in chunk.quarantined]
        if lines:
            quarantine.parent.mkdir(exist_ok=True)
            with quarantine.open("ab") as handle:
                write_quarantine(handle, Path(source).name, lines)
        state.update(lines=pending[-1].last_line, stats=stats.to_dict())
        self._save(source, state)

    def _save(self, source: str, state: dict[str, Any]) -> None:
        self.progress[source] = state
        write_json_atomic(self.progress_path, self.progress)

    @staticmethod
    def _report(path: Path, state: dict[str, Any], skipped: bool) -> CorpusFileReport:
        stats = PipelineStats.from_dict(state["stats"])
        return CorpusFileReport(
            path, skipped, state["lines"], stats["split"].forwarded, stats["index"].forwarded, stats
        )


def _keep_quarantined_lines(path: Path, done: int) -> None:
    """Drop quarantine records of lines after `done`: the resumed run reads those lines again."""
    if not path.exists():
        return
    kept = [line for line in path.read_bytes().splitlines() if orjson.loads(line)["line_number"] <= done]
    path.write_bytes(b"".join(line + b"\n" for line in kept))


def indexed_corpus(directory: Path) -> list[dict[str, Any]]:
    """The files of an overlap index with their identity and counts (for cards and manifests)."""
    path = directory / PROGRESS_FILE
    progress: dict[str, Any] = orjson.loads(path.read_bytes()) if path.exists() else {}
    return [
        {
            **state["identity"],
            "complete": state["complete"],
            "sentences_indexed": state["stats"]["stages"]["index"]["out"],
        }
        for _, state in sorted(progress.items())
    ]
