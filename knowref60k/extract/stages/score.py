"""Validity: every candidate gets its validity score (knowref60k.extract.scorer), the chance that its
two antecedents are two people the pronoun can refer to. Nothing is dropped here: `prepare` sets aside
the candidates below the threshold, so a later model can still take them up."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Sentence


class ValidityScore(ExtractStage[Sentence, Sentence]):
    name = "validity"
    unit = "candidates"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.scorer = context.validity_scorer

    def run(self, items: Iterable[Sentence]) -> Iterator[Sentence]:
        sentences = list(items)  # one chunk's few candidates, scored together
        scores = self.scorer.scores([(s.doc, s.target, s.antecedents) for s in sentences])  # type: ignore[misc]
        for sentence, score in zip(sentences, scores, strict=True):
            sentence.validity_score = score
            self.count(None)
            yield sentence
