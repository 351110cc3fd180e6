"""Clean: drop placeholders, bot comments and comments with no prose left; the rest as paragraphs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.core.records import Comment
from knowref60k.core.stage import Stage
from knowref60k.extract.cleaning import PLACEHOLDER_BODIES, clean_text, is_bot
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Paragraph


class Clean(Stage[Comment, Paragraph]):
    name = "clean"
    unit = "comments"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()
        self.bot_names = context.bot_names

    def paragraphs(self, comment: Comment) -> list[str] | str:
        """The comment's cleaned paragraphs, or the reason it is dropped."""
        body = comment.body.strip()
        if not body:
            return "empty"
        placeholder = PLACEHOLDER_BODIES.get(body)
        if placeholder:
            return placeholder
        if is_bot(comment.author, self.bot_names):
            return "bot_author"
        return clean_text(comment.body) or "empty_after_cleaning"

    def reject(self, item: Comment) -> str | None:
        found = self.paragraphs(item)
        return found if isinstance(found, str) else None

    def run(self, items: Iterable[Comment]) -> Iterator[Paragraph]:
        for comment in items:
            found = self.paragraphs(comment)
            if self.count(found if isinstance(found, str) else None):
                yield from (Paragraph(comment, index, text) for index, text in enumerate(found))
