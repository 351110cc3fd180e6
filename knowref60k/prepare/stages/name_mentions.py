"""Name mentions: a candidate whose sentence names an antecedent again in a way perturbation cannot rename
safely (a word of both names, a name inside a longer one, a common word starting a sentence: see
`knowref60k.prepare.name_mentions`) is dropped before de-duplication, since renaming it would either leave
an original name beside the new ones or rename a word that is not the person."""

from __future__ import annotations

from knowref60k.core.stage import Stage
from knowref60k.prepare.name_mentions import name_mentions
from knowref60k.prepare.rows import Row


class NameMention(Stage[Row, Row]):
    name = "name_mention"
    unit = "candidates"

    def reject(self, item: Row) -> str | None:
        return name_mentions(item).problem
