"""User mentions: a candidate whose sentence names a Reddit account (`u/name`, `/u/name`, `r/u_name`) is
dropped before anyone labels it, so no username reaches annotators or a release (masking it would leave
an odd sentence to judge). It runs here, not in extraction, so that what extraction finds, and the
validity model trained on it, stay as they are."""

from __future__ import annotations

from knowref60k.core.privacy import names_a_user
from knowref60k.core.stage import Stage
from knowref60k.prepare.rows import Row


class UserMention(Stage[Row, Row]):
    name = "user_mention"
    unit = "candidates"

    def reject(self, item: Row) -> str | None:
        return "names_a_user" if names_a_user(item["sentence"]) else None
