"""Cut a range of lines out of a dump into a new zstd file compressed the way Pushshift does."""

from __future__ import annotations

from pathlib import Path

import zstandard

from knowref60k.readers import iter_line_chunks, iter_lines, open_input

# Pushshift: long-distance matching with a 2 GiB window (level 19 there; 3 keeps slicing fast).
LEVEL = 3
WINDOW_LOG = 31


def write_line_range(source: Path, target: Path, skip: int, count: int) -> int:
    """Write lines `skip+1 .. skip+count` of `source` to `target` (.zst); returns the lines written."""
    parameters = zstandard.ZstdCompressionParameters.from_level(LEVEL, window_log=WINDOW_LOG, enable_ldm=True)
    compressor = zstandard.ZstdCompressor(compression_params=parameters)
    written = 0
    with (
        open_input(source) as (_raw, stream),
        target.open("wb") as handle,
        compressor.stream_writer(handle) as writer,
    ):
        lines = (line for chunk in iter_line_chunks(stream, source.name) for line in iter_lines(chunk))
        for number, line in lines:
            if number > skip + count:
                break
            if number > skip:
                writer.write(line + b"\n")
                written += 1
    return written
