"""Split: paragraphs into sentences with spaCy's sentence splitter (counts paragraphs in, sentences out)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.core.stage import Stage
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import Paragraph, Sentence


class Split(Stage[Paragraph, Sentence]):
    name = "split"
    unit = "paragraphs -> sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()
        self.pipeline = context.pipeline

    def run(self, items: Iterable[Paragraph]) -> Iterator[Sentence]:
        for paragraph in items:
            self.stats.total += 1
            for span in self.pipeline.split(paragraph.text).sents:
                self.stats.forwarded += 1
                yield Sentence(paragraph.comment, f"{paragraph.index}:{span.start_char}", span)
