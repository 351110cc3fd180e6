"""Read: the lines of a chunk as comments; a line that cannot be used is quarantined with its reason."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from knowref60k.core.records import Comment
from knowref60k.extract.context import ExtractStage
from knowref60k.extract.records import LineBatch
from knowref60k.ingest.readers import parse_chunk


class ReadLines(ExtractStage[LineBatch, Comment]):
    name = "read"
    unit = "lines"

    def run(self, items: Iterable[LineBatch]) -> Iterator[Comment]:
        for batch in items:
            comments, quarantined = parse_chunk(batch.chunk, batch.input_format, self.stats)
            self.quarantined += quarantined
            yield from comments
