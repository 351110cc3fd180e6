"""What the validity model learns from and is measured on: the candidate the loose rule makes of each
judged sentence, its feature vector, and whether the gold set calls it valid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowref60k.core.config import ExtractConfig
from knowref60k.core.stage import chain
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.pipeline import STAGES, candidate
from knowref60k.extract.records import LineBatch, Sentence
from knowref60k.extract.stages.validity import ValidityScore
from knowref60k.extract.validity import Array, CandidateFeatures
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
    """The loose rule's candidate of every judged sentence that yields one, with its features and label."""
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
