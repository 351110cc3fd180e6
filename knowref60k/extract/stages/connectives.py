"""Connective filter: find connectives (multi-word ones as one), collapse adjacent ones, count them."""

from __future__ import annotations

from collections.abc import Sequence

from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Sentence, TokenRange


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


class ConnectiveFilter(ExtractStage[Sentence, Sentence]):
    """Keeps sentences with at least one and at most `max_connectives` connectives (after collapsing).

    The sentence's final punctuation ends it and is not a connective, even when it is a `;`.
    """

    name = "connective"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.finder = ConnectiveFinder(context.config.connectives)
        self.max_connectives = context.config.max_connectives

    def reject(self, item: Sentence) -> str | None:
        item.words = [token.lower_ for token in item.span]
        found = self.connectives(item.words)
        if isinstance(found, str):
            return found
        item.connectives = found
        return None

    def connectives(self, words: Sequence[str]) -> list[TokenRange] | str:
        """The collapsed connectives of a sentence's lower-cased words, or the reason it is dropped."""
        found = self.finder.find(words[:-1])
        if not found:
            return "no_connective"
        if len(found) > self.max_connectives:
            return "too_many_connectives"
        return found
