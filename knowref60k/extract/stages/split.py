"""Split: paragraphs into sentences with spaCy's sentence splitter (counts paragraphs in, sentences out).

A paragraph longer than the model's `max_length` (a 1 MB comment) is split in pieces that spaCy accepts,
cut after a sentence end where there is one, so that no single line can abort a whole shard."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.records import Paragraph, Sentence

SENTENCE_BREAKS = (". ", "! ", "? ")


class Split(ExtractStage[Paragraph, Sentence]):
    name = "split"
    unit = "paragraphs -> sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.pipeline = context.pipeline
        self.longest = self.pipeline.nlp.max_length

    def run(self, items: Iterable[Paragraph]) -> Iterator[Sentence]:
        for paragraph in items:
            self.stats.total += 1
            for offset, piece in pieces(paragraph.text, self.longest):
                for span in self.pipeline.split(piece).sents:
                    self.stats.forwarded += 1
                    position = f"{paragraph.index}:{offset + span.start_char}"
                    text = piece[span.start_char : span.end_char]
                    yield Sentence(paragraph.comment, position, span, text)


def pieces(text: str, longest: int) -> Iterator[tuple[int, str]]:
    """(offset, piece) of at most `longest` characters each; cut after the last sentence end followed by
    a space in reach, else after the last space, else anywhere."""
    start = 0
    while len(text) - start > longest:
        window_end = start + longest
        cut = max(text.rfind(mark, start, window_end) for mark in SENTENCE_BREAKS) + 2
        if cut <= start + 1:
            cut = text.rfind(" ", start, window_end) + 1
        if cut <= start:
            cut = window_end
        yield start, text[start:cut]
        start = cut
    yield start, text[start:]
