"""Cut ranges of lines out of a dump into new zstd files compressed the way Pushshift does: slices for
tests and benchmarks, and shards so that several workers can share one large monthly dump."""

from __future__ import annotations

from pathlib import Path

import zstandard

from knowref60k.core.errors import UserError
from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input

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


def count_lines(source: Path) -> int:
    with open_input(source) as (_raw, stream):
        chunks = iter_line_chunks(stream, source.name)
        return sum(chunk.data.count(b"\n") + (not chunk.data.endswith(b"\n")) for chunk in chunks)


def split_dump(source: Path, out_dir: Path, shards: int) -> list[Path]:
    """Cut a dump into `shards` contiguous line ranges (Pushshift-style zstd each), so workers can share
    one month. Line numbers restart in each shard; the shard's name keeps its place in the dump."""
    if shards < 1:
        raise UserError(f"--shards must be at least 1, not {shards}")
    total = count_lines(source)
    if shards > max(total, 1):
        raise UserError(f"--shards {shards}: more shards than the {total:,} lines of {source}")
    size = -(-total // shards)
    stem = source.name.split(".")[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard in range(shards):
        target = out_dir / f"{stem}.part-{shard:05d}-of-{shards:05d}.zst"
        write_line_range(source, target, shard * size, size)
        paths.append(target)
    return paths
