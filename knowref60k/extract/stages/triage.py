"""Triage: drop comments with nothing to read (empty, deleted, removed) and comments by bots."""

from __future__ import annotations

from knowref60k.core.records import Comment
from knowref60k.extract.cleaning import PLACEHOLDER_BODIES, is_bot
from knowref60k.extract.context import ExtractContext, ExtractStage


class Triage(ExtractStage[Comment, Comment]):
    name = "triage"
    unit = "comments"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.bot_names = context.bot_names

    def reject(self, item: Comment) -> str | None:
        body = item.body.strip()
        if not body:
            return "empty"
        placeholder = PLACEHOLDER_BODIES.get(body)
        if placeholder:
            return placeholder
        return "bot_author" if is_bot(item.author, self.bot_names) else None
