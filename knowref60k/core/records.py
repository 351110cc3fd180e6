"""Typed records passed between stages."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, NamedTuple


class Comment(NamedTuple):
    """One input document with its provenance. Plain-text inputs carry only `comment_id` (the line number).

    A named tuple rather than a frozen dataclass: as immutable, and made three times faster, which counts
    for a record made once per line of a dump."""

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
    # The line as far as it may be kept (JSON with its author fields redacted), or None for a line that
    # could not be parsed: its text could name a person.
    raw: str | None
    # The original line's size in bytes, and for a line whose text is not kept its SHA-256 (hex).
    size: int | None = None
    sha256: str | None = None


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
    # The chance that the candidate is a valid problem (knowref60k.extract.scorer); None: not scored.
    validity_score: float | None = None

    def row(self, source: str, position: str) -> dict[str, Any]:
        """The candidate as a row of a candidates file (see `core.io.CANDIDATE_SCHEMA`)."""
        comment, text = self.comment, self.sentence
        return {
            "candidate_id": candidate_id(source, comment.comment_id, position, text),
            "source_file": source,
            "line_number": comment.line_number,
            "comment_id": comment.comment_id,
            "link_id": comment.link_id,
            "subreddit": comment.subreddit,
            "created_utc": comment.created_utc,
            "sentence": text,
            **_span_columns("connective", self.connective, text),
            **_span_columns("antecedent1", self.antecedent1, text),
            **_span_columns("antecedent2", self.antecedent2, text),
            **_span_columns("pronoun", self.pronoun, text),
            "pronoun_gender": self.pronoun_gender,
            "validity_score": self.validity_score,
        }


def _span_columns(name: str, span: Span, text: str) -> dict[str, Any]:
    return {name: span.of(text), f"{name}_start": span.start, f"{name}_end": span.end}


def candidate_id(source: str, comment_id: str, position: str, sentence: str) -> str:
    """Stable id: the same sentence at the same place of the same comment and dump gets the same id."""
    key = "\x1f".join((source, comment_id, position, sentence)).encode()
    return hashlib.blake2b(key, digest_size=10).hexdigest()
