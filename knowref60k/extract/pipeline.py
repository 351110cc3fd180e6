"""The extraction pipeline: its stages in order, and one chunk of lines through all of them.

Adding a stage is one new module in `stages/` plus one line in `STAGES`: its counters join the funnel,
and its source joins the code fingerprint that decides whether earlier outputs are still valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.core.records import Candidate, QuarantinedLine
from knowref60k.core.stage import chain, collect_stats, quarantined_by
from knowref60k.core.stats import PipelineStats
from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import LineBatch, Sentence, character_span
from knowref60k.extract.stages.antecedents import AntecedentFilter
from knowref60k.extract.stages.clean import Clean
from knowref60k.extract.stages.connectives import ConnectiveFilter
from knowref60k.extract.stages.language import LanguageFilter
from knowref60k.extract.stages.prefilter import Prefilter
from knowref60k.extract.stages.read import ReadLines
from knowref60k.extract.stages.score import ValidityScore
from knowref60k.extract.stages.screen import Screen
from knowref60k.extract.stages.shape import ShapeFilter
from knowref60k.extract.stages.split import Split
from knowref60k.extract.stages.surface import SurfaceFilter
from knowref60k.extract.stages.triage import Triage
from knowref60k.ingest.readers import LineChunk

StageClass = type[ExtractStage[Any, Any]]

STAGES: tuple[StageClass, ...] = (
    ReadLines,
    Triage,
    Screen,
    Clean,
    Prefilter,
    SurfaceFilter,
    Split,
    ShapeFilter,
    ConnectiveFilter,
    AntecedentFilter,
    LanguageFilter,
    ValidityScore,
)


@dataclass
class ChunkResult:
    rows: list[dict[str, Any]]
    quarantined: list[QuarantinedLine]
    stats: PipelineStats


class CandidateExtractor:
    """Runs every stage on chunks of lines. Built once per worker: the spaCy model loads once."""

    def __init__(self, config: ExtractConfig, model_name: str, stages: Sequence[StageClass] = STAGES) -> None:
        self.config = config
        self.context = ExtractContext(config, model_name)
        self.stages = tuple(stages)
        # Load the model and word lists now: a missing model fails at start, not on the first chunk.
        self.pipeline = self.context.pipeline
        self.context.lexicon  # noqa: B018

    def process(self, source: str, input_format: str, chunk: LineChunk) -> ChunkResult:
        """All stages on one chunk; the strings spaCy adds for it are freed afterwards."""
        with self.pipeline.chunk_zone():
            stages = [stage(self.context) for stage in self.stages]
            sentences = chain(stages, [LineBatch(input_format, chunk)])
            rows = [candidate(sentence).row(source, sentence.position) for sentence in sentences]
            return ChunkResult(rows, quarantined_by(stages), collect_stats(stages, PipelineStats()))


def candidate(sentence: Sentence) -> Candidate:
    """The sentence as a candidate, with character spans in place of token positions."""
    doc, target, antecedents = sentence.doc, sentence.target, sentence.antecedents
    if doc is None or target is None or antecedents is None:
        raise ValueError(f"sentence {sentence.position} did not pass the antecedent stage")

    first, second = antecedents
    pronoun = character_span(doc, target.pronoun, target.pronoun + 1)
    return Candidate(
        comment=sentence.comment,
        sentence=sentence.text,
        connective=character_span(doc, target.connective.start, target.connective.end),
        antecedent1=character_span(doc, first.name_start, first.end),
        antecedent2=character_span(doc, second.name_start, second.end),
        pronoun=pronoun,
        pronoun_gender=TARGET_PRONOUNS[pronoun.of(sentence.text).lower()],
        validity_score=sentence.validity_score,
    )
