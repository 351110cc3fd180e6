"""The typed records that travel between the extraction stages."""

from __future__ import annotations

from dataclasses import dataclass, field

from spacy.tokens import Doc, Span

from knowref60k.core.records import Comment
from knowref60k.core.records import Span as CharacterSpan
from knowref60k.ingest.readers import LineChunk


@dataclass(frozen=True, slots=True)
class LineBatch:
    """A chunk of an input file's lines, the pipeline's input."""

    input_format: str
    chunk: LineChunk


@dataclass(frozen=True, slots=True)
class Paragraph:
    comment: Comment
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class TokenRange:
    """Tokens `start:end` of a sentence."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Target:
    """The connective the antecedents precede, and the target pronoun after it."""

    connective: TokenRange
    pronoun: int


@dataclass(frozen=True, slots=True)
class NounPhrase:
    """A minimal noun phrase (tokens `start:end`) and its trailing run of proper nouns (`name_start:end`)."""

    start: int
    end: int
    name_start: int

    @property
    def has_name(self) -> bool:
        return self.name_start < self.end


@dataclass(slots=True)
class Sentence:
    """A sentence on its way through the filters; each stage fills in what it found."""

    comment: Comment
    position: str
    span: Span
    # The span's text, sliced from the paragraph once (Span.text joins its tokens' texts at every call).
    text: str
    words: list[str] = field(default_factory=list)
    connectives: list[TokenRange] = field(default_factory=list)
    target: Target | None = None
    doc: Doc | None = None
    antecedents: tuple[NounPhrase, NounPhrase] | None = None
    validity_score: float | None = None


def character_span(doc: Doc, start: int, end: int) -> CharacterSpan:
    """Tokens `start:end` of a sentence's doc as characters of its text."""
    last = doc[end - 1]
    return CharacterSpan(doc[start].idx, last.idx + len(last.text))
