"""What the validity model learns from and is measured on: the candidate the loose rule makes of each
judged sentence, its feature vector, and whether the gold set calls it valid."""

from __future__ import annotations

import dataclasses
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from knowref60k.core.cache import cache_key, cache_path, computing, read_cached, write_cached
from knowref60k.core.config import ExtractConfig
from knowref60k.core.names import NAMES_DIR
from knowref60k.core.stage import chain, stage_modules
from knowref60k.core.versioning import code_fingerprint, data_fingerprint
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.extractor import BOTS_DIR
from knowref60k.extract.nlp import model_version
from knowref60k.extract.pipeline import STAGES, candidate
from knowref60k.extract.records import LineBatch, Sentence
from knowref60k.extract.scorer import Array, CandidateFeatures
from knowref60k.extract.stages.score import ValidityScore
from knowref60k.ingest.readers import LineChunk
from knowref60k.quality.gold import GoldItem, judge

# The loose rule with the gold pool's wide structure (more connectives, longer sentences, digits), so
# that every judged sentence yields its candidate; the features do not depend on those settings.
TRAINING_CONFIG = ExtractConfig(
    person_detection="score",
    max_connectives=8,
    max_spaces=60,
    max_tokens=70,
    min_spaces=4,
    forbidden_chars="+=<",
)
UNSCORED_STAGES = tuple(stage for stage in STAGES if stage is not ValidityScore)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Example:
    item: GoldItem
    row: dict[str, Any]
    features: list[float]
    # Both spans' mean contextual vectors, before the projection the model learns.
    context: list[Array]
    # None when valid, else the gold reason or the span error (broken_span, wrong_person).
    error: str | None

    @property
    def valid(self) -> bool:
        return self.error is None


def examples(
    items: Sequence[GoldItem], model_name: str, config: ExtractConfig = TRAINING_CONFIG
) -> list[Example]:
    """The loose rule's candidate of every judged sentence that yields one, with its features and label.

    Parsing the gold set takes about half a minute, and the build, fine-tuning, learning-curve and
    evaluation commands each need the same examples: they are kept in the user's cache folder under a
    hash of everything they depend on (the items, the settings, the spaCy pipeline and its version, the
    code of the stages and of this module, the name and bot lists)."""
    path = cache_path("gold-examples", _cache_key(items, model_name, config)).with_suffix(".npz")
    with computing(path):
        cached = _from_cache(read_cached(path), items)
        if cached is not None:
            return cached
        found = parse_examples(items, model_name, config)
        if found:
            write_cached(path, _to_cache(found, items))
    return found


def _cache_key(items: Sequence[GoldItem], model_name: str, config: ExtractConfig) -> str:
    return cache_key(
        config.fingerprint(model_name, model_version(model_name)),
        code_fingerprint(__name__, *stage_modules(UNSCORED_STAGES)),
        data_fingerprint(NAMES_DIR, BOTS_DIR),
        orjson.dumps([dataclasses.astuple(item) for item in items]),
    )


def _from_cache(data: bytes | None, items: Sequence[GoldItem]) -> list[Example] | None:
    if data is None:
        return None
    try:
        with np.load(io.BytesIO(data)) as stored:
            records, context = orjson.loads(stored["records"].tobytes()), stored["context"]
        return [
            Example(items[index], row, features, list(vectors), error)
            for (index, row, features, error), vectors in zip(records, context, strict=True)
        ]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        log.warning("computing the gold examples again: the cached ones are unreadable (%s)", error)
        return None


def _to_cache(found: list[Example], items: Sequence[GoldItem]) -> bytes:
    index = {id(item): number for number, item in enumerate(items)}
    records = [[index[id(e.item)], e.row, e.features, e.error] for e in found]
    context = np.array([e.context for e in found], dtype=np.float64).reshape(len(found), 2, -1)
    buffer = io.BytesIO()
    np.savez(buffer, records=np.frombuffer(orjson.dumps(records), dtype=np.uint8), context=context)
    return buffer.getvalue()


def parse_examples(
    items: Sequence[GoldItem], model_name: str, config: ExtractConfig = TRAINING_CONFIG
) -> list[Example]:
    """The examples of `examples`, computed afresh (no cache)."""
    context = ExtractContext(config, model_name)
    features = CandidateFeatures(context.lexicon)
    data = "\n".join(item.sentence.replace("\n", " ") for item in items).encode() + b"\n"
    found: list[Example] = []
    with context.pipeline.chunk_zone():
        stages = [stage(context) for stage in UNSCORED_STAGES]
        sentences: list[Sentence] = list(chain(stages, [LineBatch("text", LineChunk(1, data))]))
        for sentence in sentences:
            item = items[sentence.comment.line_number - 1]
            row = candidate(sentence).row("gold", sentence.position)
            if row["sentence"] != item.sentence:  # another sentence of the same line
                continue
            spans = sentence.antecedents
            vector = features.vector(sentence.doc, sentence.target, spans)  # type: ignore[arg-type]
            vectors = features.context(sentence.doc, spans)  # type: ignore[arg-type]
            found.append(Example(item, row, vector, vectors, judge(item, row)))
    return found
