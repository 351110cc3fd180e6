"""Surface pre-filter: drop, on the plain string, a paragraph no sentence of which can pass the shape,
connective and antecedent filters, before spaCy tokenises it.

Every check is a necessary condition that holds for any part of the paragraph that contains a passing
sentence, so it can only drop paragraphs the full filters would drop too: a passing sentence has no
forbidden character, so it lies within one stretch of the paragraph between such characters; that
stretch then has at least `min_spaces` spaces, a target pronoun, a connective before it, and at least
two capitalised words (the two names) before that connective. `tests/test_surface.py` and `make bench`
check on real data that the candidates are the same with the pre-filter on and off.

The antecedent filter also drops a sentence with a third-person pronoun before its connective, so the
two names must follow the last such pronoun before the connective. Only a pronoun standing alone
between spaces (quotes, brackets, final punctuation and "'s"-style endings aside) is trusted here,
since spaCy makes a token of exactly that word; anything else ("it.com", "his_name") is not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.core.stage import Stage
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Paragraph

# A run of letters: a name token starts one (digits are forbidden in a sentence anyway).
_LETTERS = re.compile(r"[^\W\d_]+")
# Letter runs and single punctuation marks, in order: the words and punctuation connectives of a chunk.
_RUNS = re.compile(r"[^\W\d_]+|[^\w\s]")
# What spaCy splits off a word as prefix or suffix, and the contractions it splits off a pronoun.
_OPENERS = "(\"'*"
_CLOSERS = ",.;:!?)\"'*"
_CONTRACTIONS = ("'s", "'re", "'d", "'ll", "'ve", "'m")


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
        self.blocking = frozenset(config.blocking_pronouns) | frozenset(TARGET_PRONOUNS)
        self.connective_words = frozenset(word for c in config.connectives for word in c.lower().split())

    def reject(self, item: Paragraph) -> str | None:
        if not self.enabled:
            return None
        stretches = self.forbidden.split(item.text) if self.forbidden else [item.text]
        return None if any(self._may_hold_a_candidate(text) for text in stretches) else "no_possible_sentence"

    def _may_hold_a_candidate(self, text: str) -> bool:
        """Two capitalised words, then a connective, then a target pronoun, in this order. Each is searched
        for from where the one before it ends, so the first of each that can work is found once."""
        if text.count(" ") < self.min_spaces:
            return False
        names_end = self._second_capitalised_word_end(text)
        if names_end is None:
            return False
        connective = self.connectives.search(text, names_end)
        if connective is None or self.pronouns.search(text, connective.end()) is None:
            return False
        return self._names_after_the_last_blocking_pronoun(text)

    def _names_after_the_last_blocking_pronoun(self, text: str) -> bool:
        """Two capitalised words with no third-person pronoun after them up to a connective, and a target
        pronoun after that connective. Every doubt counts in favour of keeping the text."""
        capitalised = 0
        armed = False
        for chunk in text.split():
            for run in _RUNS.finditer(chunk):
                word = run.group()
                if armed and self.pronouns.fullmatch(word):
                    return True
                armed = armed or (capitalised >= 2 and word.lower() in self.connective_words)
                capitalised += len(word) > 1 and word[0].isupper()
            if self._bare_word(chunk) in self.blocking:
                capitalised = 0
        return False

    @staticmethod
    def _bare_word(chunk: str) -> str:
        """The chunk's word without the quotes, brackets and punctuation spaCy splits off, lower-cased."""
        word = chunk.lstrip(_OPENERS).rstrip(_CLOSERS).lower()
        ending = next((c for c in _CONTRACTIONS if word.endswith(c)), "")
        return word[: len(word) - len(ending)]

    @staticmethod
    def _second_capitalised_word_end(text: str) -> int | None:
        capitalised = 0
        for match in _LETTERS.finditer(text):
            word = match.group()
            capitalised += len(word) > 1 and word[0].isupper()
            if capitalised == 2:
                return match.end()
        return None
