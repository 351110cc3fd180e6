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

import bisect
import re
from collections.abc import Iterable

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.nlp import CaselessPattern, trie_pattern
from knowref60k.extract.records import Paragraph

# A run of letters: a name token starts one (digits are forbidden in a sentence anyway).
_LETTERS = re.compile(r"[^\W\d_]+")
# In ASCII text, a run of letters that is a capitalised word (two letters or more, the first a capital).
_ASCII_CAPITALISED = re.compile(r"(?<![A-Za-z])[A-Z][A-Za-z]+")
# What spaCy splits off a word as prefix or suffix, and the contractions it splits off a pronoun.
_OPENERS = r"[(\"'*]*"
_CLOSERS = r"[,.;:!?)\"'*]*"
_CONTRACTIONS = r"(?:'s|'re|'d|'ll|'ve|'m)?"


def bare_word_pattern(words: Iterable[str]) -> CaselessPattern:
    """The words standing alone between spaces, quotes, brackets and final punctuation aside ("(it)",
    "he's,"): where spaCy surely makes a token of the word itself."""
    lowered = {word.lower() for word in words}
    return CaselessPattern(rf"(?:^|\s){_OPENERS}{trie_pattern(lowered)}{_CONTRACTIONS}{_CLOSERS}(?=\s|$)")


def connective_pattern(connectives: Iterable[str]) -> CaselessPattern:
    """Any word of any connective ("though" of "even though"), or a punctuation connective. The words
    are one trie-shaped alternation: scanning a paragraph for them is several times faster."""
    words = {word.lower() for connective in connectives for word in connective.split()}
    alternatives = [re.escape(word) for word in sorted(words) if not word.isalpha()]
    letters = [word for word in words if word.isalpha()]
    if letters:
        alternatives.insert(0, rf"\b{trie_pattern(letters)}\b")
    return CaselessPattern("|".join(alternatives))


class SurfaceFilter(ExtractStage[Paragraph, Paragraph]):
    name = "surface"
    unit = "paragraphs"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        config = context.config
        self.enabled = config.surface_prefilter
        self.pronouns = context.target_pronouns
        self.connectives = connective_pattern(config.connectives)
        forbidden = "".join(sorted(set(config.forbidden_chars)))
        self.forbidden = re.compile(f"[{re.escape(forbidden)}]") if forbidden else None
        self.min_spaces = config.min_spaces
        self.blocking_words = bare_word_pattern({*config.blocking_pronouns, *TARGET_PRONOUNS})

    def reject(self, item: Paragraph) -> str | None:
        if not self.enabled:
            return None
        stretches = self.forbidden.split(item.text) if self.forbidden else [item.text]
        return None if any(self._may_hold_a_candidate(text) for text in stretches) else "no_possible_sentence"

    def _may_hold_a_candidate(self, text: str) -> bool:
        """Two capitalised words, then a connective, then a target pronoun, with no third-person pronoun
        between the first of those words and the connective.

        The blocking pronouns cut the text into segments: the names and the connective must lie in one.
        From the start of a segment, take the end of its second capitalised word and the first connective
        after that. If no pronoun follows it, no later connective has one either; if the connective lies
        in a later segment, no segment before that one can hold a candidate (their first connective after
        the names is this one), so the search goes on from the start of the connective's segment.
        """
        if text.count(" ") < self.min_spaces:
            return False
        blocking_ends: list[int] | None = None
        start = 0
        while True:
            names_end = self._second_capitalised_word_end(text, start)
            if names_end is None:
                return False
            connective = self.connectives.search(text, names_end)
            if connective is None or self.pronouns.search(text, connective.end()) is None:
                return False
            if blocking_ends is None:
                blocking_ends = [0, *(match.end() for match in self.blocking_words.finditer(text))]
            segment_start = blocking_ends[bisect.bisect_right(blocking_ends, connective.start()) - 1]
            if segment_start == start:
                return True
            start = segment_start

    @staticmethod
    def _second_capitalised_word_end(text: str, start: int = 0) -> int | None:
        """Where the second capitalised word from `start` (never inside a word) ends."""
        if text.isascii():
            # The same runs, found by the regex engine instead of a Python loop over every word.
            words = _ASCII_CAPITALISED.finditer(text, start)
            second = next(words, None) and next(words, None)
            return second.end() if second else None
        capitalised = 0
        for match in _LETTERS.finditer(text, start):
            word = match.group()
            capitalised += len(word) > 1 and word[0].isupper()
            if capitalised == 2:
                return match.end()
        return None
