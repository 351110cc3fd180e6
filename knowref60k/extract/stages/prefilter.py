"""Prefilter: a paragraph without a target pronoun cannot give a candidate; skip it before spaCy."""

from __future__ import annotations

from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Paragraph


class Prefilter(ExtractStage[Paragraph, Paragraph]):
    name = "prefilter"
    unit = "paragraphs"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.pattern = context.target_pronouns

    def reject(self, item: Paragraph) -> str | None:
        return None if self.pattern.search(item.text) else "no_target_pronoun"
