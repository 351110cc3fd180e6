"""Clean: a comment's body as cleaned paragraphs of prose; a comment with no prose left is dropped."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.core.records import Comment
from knowref60k.extract.cleaning import clean_text
from knowref60k.extract.context import ExtractStage
from knowref60k.extract.records import Paragraph


class Clean(ExtractStage[Comment, Paragraph]):
    name = "clean"
    unit = "comments"

    def run(self, items: Iterable[Comment]) -> Iterator[Paragraph]:
        for comment in items:
            paragraphs = clean_text(comment.body)
            if self.count(None if paragraphs else "empty_after_cleaning"):
                yield from (Paragraph(comment, index, text) for index, text in enumerate(paragraphs))
