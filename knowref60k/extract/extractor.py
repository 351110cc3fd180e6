"""Candidate extraction: every stage over chunks of lines, in worker processes, one Parquet file per input."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from spacy.tokens import Doc

from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.core.io import (
    CANDIDATE_SCHEMA,
    RowWriter,
    atomic_path,
    file_sha256,
    finished_marker,
    source_identity,
    write_json_atomic,
    write_quarantine,
)
from knowref60k.core.names import NameLexicon, known_first_names, known_surnames, popular_first_names
from knowref60k.core.parallel import WorkerPool
from knowref60k.core.records import Comment, QuarantinedLine
from knowref60k.core.stats import PipelineStats
from knowref60k.core.versioning import __version__, code_fingerprint
from knowref60k.extract.cleaning import Cleaner, load_bot_names
from knowref60k.extract.nlp import Pipeline, common_words, model_version, pronoun_pattern, resolve_model_name
from knowref60k.extract.stages.antecedents import AntecedentFilter, NounPhrase, Target
from knowref60k.extract.stages.connectives import ConnectiveFilter
from knowref60k.extract.stages.language import LanguageFilter
from knowref60k.extract.stages.shape import ShapeFilter
from knowref60k.ingest.readers import (
    LineChunk,
    check_input,
    compression_of,
    detect_format,
    iter_line_chunks,
    open_input,
    parse_chunk,
)

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
# A first name that is also a common word counts at a sentence's start only if this popular (percent).
POPULAR_NAME_PERCENT = 0.01


@dataclass
class ChunkResult:
    rows: list[dict[str, Any]]
    quarantined: list[QuarantinedLine]
    stats: PipelineStats


@dataclass(frozen=True, slots=True)
class _Sentence:
    """A sentence that passed the word-level filters and waits for the tagger."""

    comment: Comment
    position: str
    text: str
    doc: Doc
    target: Target


class CandidateExtractor:
    """Runs every stage on chunks of lines. Built once per worker: the spaCy model loads once."""

    def __init__(self, config: ExtractConfig, model_name: str) -> None:
        self.config = config
        self.pipeline = Pipeline(model_name)
        self.prefilter = pronoun_pattern(self.pipeline.nlp, TARGET_PRONOUNS)
        self.bot_names = load_bot_names()
        self.lexicon = NameLexicon(
            first_names=known_first_names(config.ssa_min_count),
            popular_first_names=popular_first_names(POPULAR_NAME_PERCENT),
            surnames=known_surnames(),
            common_words=common_words(self.pipeline.nlp),
        )

    def process(self, source: str, input_format: str, chunk: LineChunk) -> ChunkResult:
        """All stages on one chunk; the strings spaCy adds for it are freed afterwards."""
        with self.pipeline.chunk_zone():
            return self._process(source, input_format, chunk)

    def _process(self, source: str, input_format: str, chunk: LineChunk) -> ChunkResult:
        stats = PipelineStats()
        comments, quarantined = parse_chunk(chunk, input_format, stats["read"])
        stats.quarantined = len(quarantined)
        cleaner = Cleaner(self.bot_names)
        shape = ShapeFilter(self.config)
        connectives = ConnectiveFilter(self.config)
        antecedents = AntecedentFilter(self.config, self.lexicon)
        language = LanguageFilter(self.config.language, self.config.language_seed)
        sentences = [
            sentence
            for comment in comments
            for sentence in self._word_level(
                comment, cleaner(comment), stats, shape, connectives, antecedents
            )
        ]
        rows = [
            _row(source, sentence, phrases)
            for sentence, phrases in self._with_antecedents(sentences, antecedents)
            if language.keep(sentence.text)
        ]
        stats.stages.update(
            clean=cleaner.stats,
            shape=shape.stats,
            connective=connectives.stats,
            antecedent=antecedents.stats,
            language=language.stats,
        )
        return ChunkResult(rows, quarantined, stats)

    def _word_level(
        self,
        comment: Comment,
        paragraphs: list[str],
        stats: PipelineStats,
        shape: ShapeFilter,
        connectives: ConnectiveFilter,
        antecedents: AntecedentFilter,
    ) -> Iterator[_Sentence]:
        """Prefilter, split, shape, connective and pronoun checks: everything before the tagger."""
        prefilter, split = stats["prefilter"], stats["split"]
        for index, paragraph in enumerate(paragraphs):
            prefilter.total += 1
            if not self.prefilter.search(paragraph):
                prefilter.drop("no_target_pronoun")
                continue
            prefilter.forwarded += 1
            split.total += 1
            for span in self.pipeline.split(paragraph).sents:
                split.forwarded += 1
                text = span.text
                if not shape.keep(text, len(span)):
                    continue
                words = [token.lower_ for token in span]
                found = connectives.connectives(words)
                if found is None:
                    continue
                target = antecedents.target(words, found)
                if target is not None:
                    yield _Sentence(comment, f"{index}:{span.start_char}", text, span.as_doc(), target)

    def _with_antecedents(
        self, sentences: list[_Sentence], antecedents: AntecedentFilter
    ) -> Iterator[tuple[_Sentence, tuple[NounPhrase, NounPhrase]]]:
        """Tag all sentences in one batch, then run NER only where the names list is not enough."""
        tagged = list(self.pipeline.tag(sentence.doc for sentence in sentences))
        with_two = []
        for sentence, doc in zip(sentences, tagged, strict=True):
            phrases = antecedents.noun_phrases(doc, sentence.target)
            if phrases is not None:
                with_two.append((sentence, phrases))
        unsure = [s.doc for s, phrases in with_two if antecedents.needs_entities(s.doc, phrases)]
        for _ in self.pipeline.recognise_entities(unsure):
            pass
        for sentence, phrases in with_two:
            chosen = antecedents.choose(sentence.doc, sentence.target, phrases)
            if chosen is not None:
                yield sentence, chosen


def _char_span(doc: Doc, start: int, end: int) -> tuple[int, int]:
    last = doc[end - 1]
    return doc[start].idx, last.idx + len(last.text)


def candidate_id(source: str, comment_id: str, position: str, sentence: str) -> str:
    """Stable id: the same sentence at the same place of the same comment and dump gets the same id."""
    key = "\x1f".join((source, comment_id, position, sentence)).encode()
    return hashlib.blake2b(key, digest_size=10).hexdigest()


def _row(source: str, sentence: _Sentence, phrases: tuple[NounPhrase, NounPhrase]) -> dict[str, Any]:
    doc, text, comment = sentence.doc, sentence.text, sentence.comment
    connective = _char_span(doc, sentence.target.connective.start, sentence.target.connective.end)
    first = _char_span(doc, phrases[0].name_start, phrases[0].end)
    second = _char_span(doc, phrases[1].name_start, phrases[1].end)
    pronoun = _char_span(doc, sentence.target.pronoun, sentence.target.pronoun + 1)
    pronoun_text = text[pronoun[0] : pronoun[1]]
    return {
        "candidate_id": candidate_id(source, comment.comment_id, sentence.position, text),
        "source_file": source,
        "line_number": comment.line_number,
        "comment_id": comment.comment_id,
        "link_id": comment.link_id,
        "subreddit": comment.subreddit,
        "created_utc": comment.created_utc,
        "sentence": text,
        "connective": text[connective[0] : connective[1]],
        "connective_start": connective[0],
        "connective_end": connective[1],
        "antecedent1": text[first[0] : first[1]],
        "antecedent1_start": first[0],
        "antecedent1_end": first[1],
        "antecedent2": text[second[0] : second[1]],
        "antecedent2_start": second[0],
        "antecedent2_end": second[1],
        "pronoun": pronoun_text,
        "pronoun_start": pronoun[0],
        "pronoun_end": pronoun[1],
        "pronoun_gender": TARGET_PRONOUNS[pronoun_text.lower()],
    }


# ---- worker processes: one extractor per process, built by the pool's initializer ----


@dataclass
class FileReport:
    """What extracting one input file did (or that it was skipped as already done)."""

    source: Path
    candidates_path: Path
    stats_path: Path
    quarantine_path: Path
    skipped: bool
    candidates: int
    stats: PipelineStats
    seconds: float = 0.0


def output_stem(path: Path) -> str:
    """`RC_2005-12.zst` -> `RC_2005-12`; `comments.jsonl.gz` -> `comments`."""
    name = path.name
    if compression_of(path):
        name = name[: -len(path.suffix)]
    stem = Path(name)
    return stem.stem if stem.suffix.lower() in {".ndjson", ".jsonl", ".json", ".txt", ".text"} else name


class Extractor:
    """Extraction over many files with one pool of worker processes (use as a context manager)."""

    def __init__(self, config: ExtractConfig, workers: int = 2, read_size: int = 4 << 20) -> None:
        self.config = config
        self.workers = max(1, workers)
        self.read_size = read_size
        self.model_name = resolve_model_name(config.model)
        self.fingerprint = "-".join(
            (config.fingerprint(self.model_name, model_version(self.model_name)), code_fingerprint(__name__))
        )
        self._workers = WorkerPool(self.workers, CandidateExtractor, config, self.model_name)

    def __enter__(self) -> Extractor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._workers.close()

    def outputs(self, path: Path, out_dir: Path) -> tuple[Path, Path, Path]:
        stem = output_stem(path)
        return (
            out_dir / f"{stem}.candidates.parquet",
            out_dir / f"{stem}.quarantine.jsonl",
            out_dir / f"{stem}.stats.json",
        )

    def is_done(self, path: Path, out_dir: Path) -> dict[str, Any] | None:
        """The finished run's stats when this file was already extracted with this config and code."""
        candidates_path, quarantine_path, stats_path = self.outputs(path, out_dir)
        return finished_marker(stats_path, (candidates_path, quarantine_path), self.fingerprint, path)

    def extract_file(
        self,
        path: Path,
        out_dir: Path,
        input_format: str = "auto",
        progress: ProgressCallback | None = None,
    ) -> FileReport:
        """Extract one file; a file already done with the same config and code is skipped."""
        check_input(path)
        input_format = detect_format(path, input_format)
        candidates_path, quarantine_path, stats_path = self.outputs(path, out_dir)
        finished = self.is_done(path, out_dir)
        if finished is not None:
            log.info("%s: already extracted with this config (%s), skipped", path.name, self.fingerprint)
            return FileReport(
                path,
                candidates_path,
                stats_path,
                quarantine_path,
                True,
                finished["candidates"],
                PipelineStats.from_dict(finished["stats"]),
            )
        started = time.perf_counter()
        source = path.name
        stats = PipelineStats()
        metadata = {"knowref60k.fingerprint": self.fingerprint, "knowref60k.model": self.model_name}
        size = path.stat().st_size
        with (
            atomic_path(candidates_path) as candidates_tmp,
            atomic_path(quarantine_path) as quarantine_tmp,
            quarantine_tmp.open("wb") as quarantine,
            open_input(path) as (raw, stream),
        ):
            writer = RowWriter(candidates_tmp, CANDIDATE_SCHEMA, metadata)
            try:
                chunks = iter_line_chunks(stream, source, self.read_size)
                for result in self._results(source, input_format, chunks):
                    writer.write(result.rows)
                    write_quarantine(quarantine, source, result.quarantined)
                    stats.merge(result.stats)
                    if progress:
                        progress(raw.tell(), size)
            finally:
                writer.close()
        seconds = time.perf_counter() - started
        self._write_stats(path, stats_path, stats, writer.rows, seconds)
        log.info("%s: %d candidates in %.1f s", source, writer.rows, seconds)
        return FileReport(
            path, candidates_path, stats_path, quarantine_path, False, writer.rows, stats, seconds
        )

    def _write_stats(
        self, path: Path, stats_path: Path, stats: PipelineStats, rows: int, seconds: float
    ) -> None:
        write_json_atomic(
            stats_path,
            {
                "source_file": path.name,
                "source": source_identity(path),
                "source_sha256": file_sha256(path),
                "fingerprint": self.fingerprint,
                "model": self.model_name,
                "model_version": model_version(self.model_name),
                "code_version": __version__,
                "config": self.config.to_dict(),
                "candidates": rows,
                "seconds": round(seconds, 3),
                "stats": stats.to_dict(),
            },
        )

    def _results(self, source: str, input_format: str, chunks: Iterable[LineChunk]) -> Iterator[ChunkResult]:
        """Chunk results in input order; at most two chunks per worker in flight (constant memory)."""
        results: Iterator[ChunkResult] = self._workers.map(
            "process", ((source, input_format, chunk) for chunk in chunks)
        )
        return results


def merge_stats(stats_files: Iterable[Path]) -> PipelineStats:
    total = PipelineStats()
    for path in stats_files:
        total.merge(PipelineStats.from_dict(orjson.loads(path.read_bytes())["stats"]))
    return total
