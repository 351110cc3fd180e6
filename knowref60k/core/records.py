"""Typed records passed between stages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Comment:
    """One input document with its provenance. Plain-text inputs carry only `comment_id` (the line number)."""

    comment_id: str
    body: str
    line_number: int
    author: str | None = None
    link_id: str | None = None
    subreddit: str | None = None
    created_utc: int | None = None


@dataclass(frozen=True, slots=True)
class QuarantinedLine:
    """An input line that could not be used, kept with the reason so nothing is lost silently."""

    line_number: int
    reason: str
    detail: str
    raw: str


@dataclass(frozen=True, slots=True)
class Span:
    """Characters `start:end` of a sentence."""

    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A sentence that passed every filter: two person antecedents, one connective, a target pronoun."""

    comment: Comment
    sentence: str
    connective: Span
    antecedent1: Span
    antecedent2: Span
    pronoun: Span
    pronoun_gender: str
