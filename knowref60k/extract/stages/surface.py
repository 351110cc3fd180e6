"""Surface pre-filter: drop, on the plain string, a paragraph no sentence of which can pass the shape,
connective and antecedent filters, before spaCy tokenises it.

Every check is a necessary condition that holds for any part of the paragraph that contains a passing
sentence, so it can only drop paragraphs the full filters would drop too: a passing sentence has no
forbidden character, so it lies within one stretch of the paragraph between such characters; that
stretch then has at least `min_spaces` spaces, a target pronoun, a connective before it, and at least
two capitalised words (the two names) before that connective. `tests/test_surface.py` and `make bench`
check on real data that the candidates are the same with the pre-filter on and off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from knowref60k.core.stage import Stage
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Paragraph

# A run of letters: a name token starts one (digits are forbidden in a sentence anyway).
_LETTERS = re.compile(r"[^\W\d_]+")


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    last = None
    for last in matches:  # noqa: B007
        pass
    return last


def connective_pattern(connectives: Iterable[str]) -> re.Pattern[str]:
    """Any word of any connective ("though" of "even though"), or a punctuation connective."""
    alternatives = set()
    for connective in connectives:
        for word in connective.split():
            alternatives.add(rf"\b{re.escape(word)}\b" if word.isalpha() else re.escape(word))
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


class SurfaceFilter(Stage[Paragraph, Paragraph]):
    name = "surface"
    unit = "paragraphs"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()
        config = context.config
        self.enabled = config.surface_prefilter
        self.pronouns = context.target_pronouns
        self.connectives = connective_pattern(config.connectives)
        forbidden = "".join(sorted(set(config.forbidden_chars)))
        self.forbidden = re.compile(f"[{re.escape(forbidden)}]") if forbidden else None
        self.min_spaces = config.min_spaces

    def reject(self, item: Paragraph) -> str | None:
        if not self.enabled:
            return None
        stretches = self.forbidden.split(item.text) if self.forbidden else [item.text]
        return None if any(self._may_hold_a_candidate(text) for text in stretches) else "no_possible_sentence"

    def _may_hold_a_candidate(self, text: str) -> bool:
        if text.count(" ") < self.min_spaces:
            return False
        pronoun = _last(self.pronouns.finditer(text))
        if pronoun is None:
            return False
        connective = _last(self.connectives.finditer(text, 0, pronoun.start()))
        if connective is None:
            return False
        capitalised = 0
        for match in _LETTERS.finditer(text, 0, connective.start()):
            word = match.group()
            capitalised += len(word) > 1 and word[0].isupper()
            if capitalised >= 2:
                return True
        return False
