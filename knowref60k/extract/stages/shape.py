"""Shape filter: the reference's cheap checks on a sentence's surface form."""

from __future__ import annotations

from knowref60k.core.config import ExtractConfig
from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Sentence


class ShapeFilter(ExtractStage[Sentence, Sentence]):
    """Keeps sentences that start with a capital, end in `.!?;`, have 10-32 spaces, <= 30 tokens, no digit."""

    name = "shape"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.config: ExtractConfig = context.config
        self.forbidden = frozenset(self.config.forbidden_chars)

    def reject(self, item: Sentence) -> str | None:
        return self.rejection(item.text, len(item.span))

    def rejection(self, text: str, token_count: int) -> str | None:
        """The reason the sentence fails, or None when it passes."""
        config = self.config
        if not text[:1].isupper():
            return "no_capital_start"
        if text[-1:] not in config.sentence_end_chars:
            return "bad_ending"
        spaces = text.count(" ")
        if spaces < config.min_spaces:
            return "too_few_spaces"
        if spaces > config.max_spaces:
            return "too_many_spaces"
        if token_count > config.max_tokens:
            return "too_many_tokens"
        if not self.forbidden.isdisjoint(text):
            return "forbidden_character"
        return None
