"""User-mention filter: a sentence that names a Reddit account (`u/name`, `/u/name`) is dropped, so no
username reaches annotators or a release (masking it would leave an odd sentence to judge)."""

from __future__ import annotations

from knowref60k.core.privacy import names_a_user
from knowref60k.core.stage import Stage
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Sentence


class UserMentionFilter(Stage[Sentence, Sentence]):
    name = "user_mention"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()

    def reject(self, item: Sentence) -> str | None:
        return "names_a_user" if names_a_user(item.text) else None
