from __future__ import annotations

import bz2
import gzip
import io
import lzma
from pathlib import Path

import orjson
import pytest
import zstandard

from knowref60k.core.errors import UserError
from knowref60k.core.stats import StageStats
from knowref60k.ingest.readers import LineChunk, detect_format, iter_line_chunks, open_input, parse_chunk

COMMENTS = [
    {
        "id": "c1",
        "author": "a",
        "body": "Zoë said “hi”",
        "subreddit": "s",
        "created_utc": "1136073600",
        "link_id": "t3_x",
    },
    {
        "id": "c2",
        "author": "b",
        "body": "second",
        "subreddit": "s",
        "created_utc": 1136073601,
        "link_id": "t3_x",
    },
]


def ndjson(records: list[dict[str, object]]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def all_lines(stream: io.BufferedIOBase | io.BytesIO, read_size: int) -> list[bytes]:
    return [line for chunk in iter_line_chunks(stream, "test", read_size) for line in chunk.data.splitlines()]


@pytest.mark.parametrize("read_size", [1, 2, 3, 5, 7, 64, 1 << 20])
def test_chunks_rejoin_lines_cut_inside_utf8_characters(read_size: int) -> None:
    data = ndjson(COMMENTS)
    assert all_lines(io.BytesIO(data), read_size) == data.splitlines()


def test_chunk_line_numbers_follow_the_file() -> None:
    data = b"".join(b'{"body": "line %d"}\n' % i for i in range(1, 101))
    chunks = list(iter_line_chunks(io.BytesIO(data), "test", 256))
    # chunks of at most 256 bytes of whole lines
    assert [chunk.first_line for chunk in chunks] == [1, 14, 27, 39, 52, 65, 78, 91]
    for chunk in chunks:
        first = chunk.data.split(b"\n", 1)[0]
        assert first == b'{"body": "line %d"}' % chunk.first_line


def test_last_line_without_newline_is_kept() -> None:
    chunks = list(iter_line_chunks(io.BytesIO(b'{"body":"a"}\n{"body":"b"}'), "test", 4))
    assert b"".join(c.data for c in chunks).splitlines()[-1] == b'{"body":"b"}'


def test_corrupt_lines_are_quarantined_with_reason_and_line_number() -> None:
    data = ndjson(COMMENTS[:1]) + b'{"id": "broken", "body": \n' + b"[1, 2]\n" + b'{"id": "x"}\n' + b"\n"
    data += b'{"id": "bad", "body": "caf\xe9"}\n' + ndjson(COMMENTS[1:])
    stats = StageStats()
    comments, quarantined = parse_chunk(LineChunk(1, data), "ndjson", stats)
    assert [c.comment_id for c in comments] == ["c1", "c2"]
    assert [(q.line_number, q.reason) for q in quarantined] == [
        (2, "invalid_json"),
        (3, "not_an_object"),
        (4, "missing_body"),
        (6, "invalid_utf8"),
    ]
    assert quarantined[0].raw is None and quarantined[0].size == len(b'{"id": "broken", "body": ')
    assert stats.total == 7 and stats.forwarded == 2
    assert stats.dropped["blank_line"] == 1


def test_created_utc_as_string_is_converted() -> None:
    comments, _ = parse_chunk(LineChunk(1, ndjson(COMMENTS)), "ndjson", StageStats())
    assert comments[0].created_utc == 1136073600
    assert (comments[0].link_id, comments[0].subreddit, comments[0].line_number) == ("t3_x", "s", 1)


def test_text_format_is_one_document_per_line() -> None:
    comments, quarantined = parse_chunk(LineChunk(10, b"first doc\r\nsecond doc\n"), "text", StageStats())
    assert [(c.comment_id, c.body) for c in comments] == [("10", "first doc"), ("11", "second doc")]
    assert quarantined == []


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".zst", lambda data: zstandard.ZstdCompressor(level=3).compress(data)),
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        ("", lambda data: data),
    ],
)
def test_every_compression_reads_back_the_same_lines(tmp_path: Path, suffix: str, compress) -> None:  # type: ignore[no-untyped-def]
    data = ndjson(COMMENTS) * 50
    path = tmp_path / f"RC_2006-01.ndjson{suffix}"
    path.write_bytes(compress(data))
    with open_input(path) as (_raw, stream):
        assert all_lines(stream, 100) == data.splitlines()


def test_zstd_with_a_2_gib_window_is_read(tmp_path: Path) -> None:
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    data = ndjson(COMMENTS)
    path = tmp_path / "RC_2099-01.zst"
    with (
        path.open("wb") as handle,
        zstandard.ZstdCompressor(compression_params=params).stream_writer(handle) as writer,
    ):
        writer.write(data)
    with open_input(path) as (_raw, stream):
        assert all_lines(stream, 1 << 20) == data.splitlines()


def test_truncated_compressed_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "RC_2006-01.gz"
    path.write_bytes(gzip.compress(ndjson(COMMENTS) * 200)[:300])
    with pytest.raises(UserError, match=r"RC_2006-01.gz: truncated after line"), open_input(path) as (_r, s):
        list(iter_line_chunks(s, path.name))


def test_missing_file_gives_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="input file not found"), open_input(tmp_path / "nope.zst"):
        pass


def test_format_detection() -> None:
    assert detect_format(Path("RC_2005-12.zst")) == "ndjson"
    assert detect_format(Path("comments.jsonl.gz")) == "ndjson"
    assert detect_format(Path("corpus.txt.xz")) == "text"
    assert detect_format(Path("whatever.bin"), "text") == "text"
    with pytest.raises(UserError, match="--input-format"):
        detect_format(Path("whatever.bin"))


def test_truncated_zstd_file_is_an_error_not_a_silent_end(tmp_path: Path) -> None:
    data = b"".join(b'{"body": "line %d"}\n' % i for i in range(50_000))
    path = tmp_path / "RC_2099-01.zst"
    compressed = zstandard.ZstdCompressor(level=3).compress(data)
    path.write_bytes(compressed[: len(compressed) // 2])
    with (
        pytest.raises(UserError, match=r"RC_2099-01.zst: .*truncated after line [1-9]\d+"),
        open_input(path) as (
            _raw,
            stream,
        ),
    ):
        list(iter_line_chunks(stream, path.name, 1 << 16))


def test_concatenated_zstd_frames_are_all_read(tmp_path: Path) -> None:
    data = ndjson(COMMENTS)
    path = tmp_path / "RC_2099-02.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(data) * 3)
    with open_input(path) as (_raw, stream):
        assert all_lines(stream, 7) == (data * 3).splitlines()


def test_gzip_members_one_after_another_and_nul_padding_are_read_whole(tmp_path: Path) -> None:
    data = ndjson(COMMENTS) * 500
    path = tmp_path / "RC_members.ndjson.gz"
    path.write_bytes(gzip.compress(data[:5_000]) + gzip.compress(data[5_000:]) + b"\0" * 512)
    with open_input(path) as (_raw, stream):
        assert all_lines(stream, 4096) == data.splitlines()


def test_bzip2_and_xz_streams_one_after_another_are_read_whole(tmp_path: Path) -> None:
    data = ndjson(COMMENTS) * 500
    for suffix, compress in ((".bz2", bz2.compress), (".xz", lzma.compress)):
        path = tmp_path / f"RC_streams.ndjson{suffix}"
        path.write_bytes(compress(data[:5_000]) + compress(data[5_000:]))
        with open_input(path) as (_raw, stream):
            assert all_lines(stream, 4096) == data.splitlines()


def test_write_line_range_cuts_exact_lines(tmp_path: Path) -> None:
    from knowref60k.ingest.slicing import write_line_range

    source = tmp_path / "RC_2099-03.ndjson"
    source.write_bytes(b"".join(b'{"body": "line %d"}\n' % i for i in range(1, 1001)))
    target = tmp_path / "RC_2099-03_slice.zst"
    assert write_line_range(source, target, 10, 25) == 25
    with open_input(target) as (_raw, stream):
        lines = all_lines(stream, 64)
    assert lines[0] == b'{"body": "line 11"}' and lines[-1] == b'{"body": "line 35"}' and len(lines) == 25


def test_split_dump_into_contiguous_shards_keeps_every_line_once(tmp_path: Path) -> None:
    from knowref60k.ingest.slicing import split_dump

    source = tmp_path / "RC_2099-04.ndjson"
    lines = [b'{"body": "line %d"}' % i for i in range(1, 1002)]
    source.write_bytes(b"\n".join(lines) + b"\n")
    shards = split_dump(source, tmp_path / "shards", 4)
    assert [p.name for p in shards] == [f"RC_2099-04.part-0000{i}-of-00004.zst" for i in range(4)]
    seen = []
    for shard in shards:
        with open_input(shard) as (_raw, stream):
            seen += all_lines(stream, 1 << 16)
    assert seen == lines
    with pytest.raises(UserError, match="at least 1"):
        split_dump(source, tmp_path / "none", 0)
