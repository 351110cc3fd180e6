"""Connective filter: find connectives (multi-word ones as one), collapse adjacent ones, count them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowref60k.core.config import ExtractConfig
from knowref60k.core.stats import StageStats


@dataclass(frozen=True, slots=True)
class TokenRange:
    """Tokens `start:end` of a sentence."""

    start: int
    end: int


class ConnectiveFinder:
    """Matches a lexicon of (possibly multi-word) connectives against lower-cased tokens."""

    def __init__(self, connectives: Sequence[str]) -> None:
        patterns = sorted({tuple(c.lower().split()) for c in connectives}, key=len, reverse=True)
        self._by_first_word: dict[str, list[tuple[str, ...]]] = {}
        for pattern in patterns:
            self._by_first_word.setdefault(pattern[0], []).append(pattern)

    def find(self, words: Sequence[str]) -> list[TokenRange]:
        """Connectives in order, case-insensitively, longest match first, adjacent ones collapsed."""
        words = [word.lower() for word in words]
        found: list[TokenRange] = []
        index = 0
        while index < len(words):
            match = self._match_at(words, index)
            if match == 0:
                index += 1
                continue
            if found and found[-1].end == index:
                found[-1] = TokenRange(found[-1].start, index + match)
            else:
                found.append(TokenRange(index, index + match))
            index += match
        return found

    def _match_at(self, words: Sequence[str], index: int) -> int:
        for pattern in self._by_first_word.get(words[index], ()):
            if tuple(words[index : index + len(pattern)]) == pattern:
                return len(pattern)
        return 0


class ConnectiveFilter:
    """Keeps sentences with at least one and at most `max_connectives` connectives (after collapsing).

    The sentence's final punctuation ends it and is not a connective, even when it is a `;`.
    """

    def __init__(self, config: ExtractConfig) -> None:
        self.finder = ConnectiveFinder(config.connectives)
        self.max_connectives = config.max_connectives
        self.stats = StageStats()

    def connectives(self, words: Sequence[str]) -> list[TokenRange] | None:
        """The collapsed connectives of a sentence when it passes, else None (the reason is counted)."""
        self.stats.total += 1
        found = self.finder.find(words[:-1])
        if not found:
            self.stats.drop("no_connective")
            return None
        if len(found) > self.max_connectives:
            self.stats.drop("too_many_connectives")
            return None
        self.stats.forwarded += 1
        return found
