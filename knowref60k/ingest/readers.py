"""Stream input files as chunks of whole lines, in constant memory, and parse lines into comments."""

from __future__ import annotations

import bz2
import hashlib
import io
import lzma
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol, cast

import orjson
import zstandard

from knowref60k.core.config import INPUT_FORMATS
from knowref60k.core.errors import UserError
from knowref60k.core.files import check_readable_file
from knowref60k.core.privacy import mask_profile_subreddit, mask_user_mentions, masked_field
from knowref60k.core.records import Comment, QuarantinedLine
from knowref60k.core.stats import StageStats

# Pushshift writes with window log 31; the default decoder limit refuses such frames.
ZSTD_MAX_WINDOW = 2**31
READ_SIZE = 4 * 1024 * 1024
# What the candidates' `created_utc` column (int64) can hold.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UTF8_BOM = b"\xef\xbb\xbf"
REDACTED = "<redacted>"
# Cyrillic and Greek letters drawn like Latin ones, for comparing key names.
LATIN_LOOKALIKES = str.maketrans("аеорсухіјѕԁһвкмнтαεορτυχικνβ", "aeopcyxijsdhbkmhtaeoptuxiknb")
_TEXT_SUFFIXES = {".txt", ".text"}
_JSON_SUFFIXES = {".ndjson", ".jsonl", ".json"}


class Decoder(Protocol):
    """What the decompressors of zlib, bz2, lzma and zstandard share: each decodes one unit (frame,
    member, stream)."""

    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


@dataclass(frozen=True)
class Compression:
    """A compressed format, read unit after unit: zstd frames, gzip members, bzip2 and xz streams."""

    name: str
    unit: str
    new_decoder: Callable[[], Decoder]
    # NUL bytes may follow a unit (gzip and xz tools pad files so).
    padded: bool = False


def _zstd_decoder() -> Decoder:
    return cast(Decoder, zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW).decompressobj())


COMPRESSIONS: dict[str, Compression] = {
    ".zst": Compression("zstd", "frame", _zstd_decoder),
    ".gz": Compression("gzip", "member", lambda: zlib.decompressobj(wbits=zlib.MAX_WBITS | 16), padded=True),
    ".bz2": Compression("bzip2", "stream", bz2.BZ2Decompressor),
    ".xz": Compression("xz", "stream", lzma.LZMADecompressor, padded=True),
}
_DECODER_ERRORS = (zstandard.ZstdError, zlib.error, lzma.LZMAError, OSError, EOFError, ValueError)


class DamagedInput(Exception):
    """What is wrong with a compressed input: `kind` is truncated, corrupt or trailing data."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class DecompressingReader(io.RawIOBase):
    """Decompresses a file unit after unit and hands out every byte it could decode before it raises
    DamagedInput: the file ends inside a unit (truncated), bytes after a whole unit start none (trailing
    data), or the decoder refuses them (corrupt). So an error can name the last line really decoded: the
    standard library's readers lose what the failing read had decoded, and zstandard's stream reader
    just stops at a truncated frame, which would lose the rest silently."""

    def __init__(self, raw: BinaryIO, compression: Compression, read_size: int = 1 << 18) -> None:
        self._raw = raw
        self.compression = compression
        self._read_size = read_size
        self._decoder = compression.new_decoder()
        self._unit_started = False
        self._buffer = bytearray()
        self._damage: DamagedInput | None = None
        # Units decoded to their end: a dump's completeness report shows zstd's frames.
        self.units = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        while self._damage is None and (size < 0 or len(self._buffer) < size):
            compressed = self._raw.read(self._read_size)
            if not compressed:
                self._check_end()
                break
            self._decompress(compressed)
        cut = len(self._buffer) if size < 0 else min(size, len(self._buffer))
        data = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        if not data and self._damage is not None:
            raise self._damage
        return data

    def _check_end(self) -> None:
        if self._unit_started and not self._decoder.eof:
            name, unit = self.compression.name, self.compression.unit
            ends = f"the file ends inside {name} {unit} {self.units + 1} (an incomplete download?)"
            self._damage = DamagedInput("truncated", ends)

    def _decompress(self, compressed: bytes) -> None:
        while compressed:
            if self._decoder.eof:
                compressed = compressed.lstrip(b"\0") if self.compression.padded else compressed
                if not compressed:
                    return
                self._decoder, self._unit_started = self.compression.new_decoder(), False
            try:
                self._buffer += self._decoder.decompress(compressed)
            except _DECODER_ERRORS as error:
                self._damage = self._refused(error)
                return
            self._unit_started = True
            if not self._decoder.eof:
                return
            self.units += 1
            compressed = self._decoder.unused_data

    def _refused(self, error: Exception) -> DamagedInput:
        name, unit = self.compression.name, self.compression.unit
        if self._unit_started:
            return DamagedInput("corrupt", f"{name} {unit} {self.units + 1} cannot be decoded ({error})")
        if self.units:
            after = f"after {name} {unit} {self.units} come bytes that are not a {name} {unit} ({error})"
            return DamagedInput("trailing data", after)
        return DamagedInput("corrupt", f"not {name} data ({error})")


# Compressions and archives read by none of the decoders: a file of one of them would otherwise be read
# as NDJSON of its compressed bytes (0 candidates, no error).
_UNREAD_COMPRESSIONS = set(
    ".zip .zipx .7z .rar .lz4 .lz .lzma .lzo .z .br .sz .snappy .tar .tgz .tbz2 .txz .tzst".split()
)
# The first bytes of compressed data, whatever the file is called: a renamed dump is named, not misread.
# Only signatures no text line begins with.
_COMPRESSION_SIGNATURES = {
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x1f\x8b\x08": "gzip",
    b"\xfd7zXZ\x00": "xz",
    **{b"BZh%d1AY&SY" % level: "bzip2" for level in range(1, 10)},
    b"PK\x03\x04": "zip",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"Rar!\x1a\x07": "rar",
    b"\x04\x22\x4d\x18": "lz4",
}
_READ_COMPRESSIONS = "zstd (.zst), gzip (.gz), bzip2 (.bz2) or xz (.xz)"


@dataclass(frozen=True, slots=True)
class LineChunk:
    """Whole lines of one file: `data` starts at line `first_line` (1-based), ends after a newline or EOF."""

    first_line: int
    data: bytes


def compression_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    return suffix if suffix in COMPRESSIONS else None


def detect_format(path: Path, requested: str = "auto") -> str:
    """`ndjson` or `text`: from the request, else from the suffix under any compression suffix."""
    if requested not in INPUT_FORMATS:
        raise UserError(f"unknown input format {requested!r}; use one of {', '.join(INPUT_FORMATS)}")
    if requested != "auto":
        return requested
    inner = path.with_suffix("") if compression_of(path) else path
    if inner.suffix.lower() in _TEXT_SUFFIXES:
        return "text"
    if inner.suffix.lower() in _JSON_SUFFIXES or inner.name.startswith("RC_"):
        return "ndjson"
    raise UserError(
        f"{path}: cannot tell the format from the name; pass --input-format ndjson or --input-format text"
    )


def check_input(path: Path) -> None:
    """A file we can read: compressed in a way we decompress, or not at all; else a UserError."""
    check_readable_file(path, "input file")
    # The inner suffix too: the .tar of a .tar.gz is an archive, not lines.
    inner = path.with_suffix("") if compression_of(path) else path
    suffix = next((s for s in (path.suffix.lower(), inner.suffix.lower()) if s in _UNREAD_COMPRESSIONS), None)
    if suffix:
        raise UserError(
            f"{path}: {suffix} files cannot be read; compress with {_READ_COMPRESSIONS}, or not at all"
        )
    with path.open("rb") as raw:
        head = raw.read(max(map(len, _COMPRESSION_SIGNATURES)))
    if compression_of(path):
        if not head:
            raise UserError(f"{path}: the compressed file is empty (0 bytes), not an empty dump")
        return
    found = next((name for sign, name in _COMPRESSION_SIGNATURES.items() if head.startswith(sign)), None)
    if found:
        raise UserError(
            f"{path}: the content is {found}-compressed, which the name does not say; the files read are "
            f"compressed with {_READ_COMPRESSIONS} and named so, or not compressed"
        )


@contextmanager
def open_input(path: Path) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(raw file, decompressed stream) of a possibly compressed file.

    The raw file's position tells how far the reading has come.
    """
    check_input(path)
    with path.open("rb") as raw:
        compression = COMPRESSIONS.get(compression_of(path) or "")
        yield raw, cast(BinaryIO, DecompressingReader(raw, compression)) if compression else raw


def iter_line_chunks(stream: BinaryIO, source: str, read_size: int = READ_SIZE) -> Iterator[LineChunk]:
    """Cut a byte stream into chunks of whole lines.

    Chunks are cut only after a newline byte, which never occurs inside a multi-byte UTF-8 character,
    so a read that ends mid-character or mid-line is carried over to the next chunk.
    """
    carry = b""
    next_line = 1
    while True:
        try:
            block = stream.read(read_size)
        except DamagedInput as damage:
            # Every line before the damage has been handed out: `next_line - 1` is the last one decoded.
            raise UserError(f"{source}: {damage.kind} after line {next_line - 1}: {damage.detail}") from None
        except OSError as error:
            raise UserError(f"{source}: cannot be read after line {next_line - 1}: {error}") from None
        if not block:
            break
        buffer = carry + block
        cut = buffer.rfind(b"\n") + 1
        if cut == 0:
            carry = buffer
            continue
        chunk, carry = buffer[:cut], buffer[cut:]
        yield LineChunk(next_line, chunk)
        next_line += chunk.count(b"\n")
    if carry:
        yield LineChunk(next_line, carry)


class InputCheck:
    """Watches the chunks of one input go by, and says afterwards whether the input looks complete.

    A truncated zstd frame is already an error (DecompressingReader). What a file cannot show is a multi-frame
    `.zst` cut exactly between two frames, or a plain file cut between two lines: both read as shorter,
    well-formed dumps. What can be seen is reported: the line count, whether the last line ends with a
    newline (a dump cut inside a line does not), and the number of zstd frames.
    """

    def __init__(self) -> None:
        self.lines = 0
        self.ends_with_newline = True

    def watch(self, chunks: Iterable[LineChunk]) -> Iterator[LineChunk]:
        for chunk in chunks:
            self.lines = chunk.first_line - 1 + chunk.data.count(b"\n")
            self.ends_with_newline = chunk.data.endswith(b"\n")
            if not self.ends_with_newline:
                self.lines += 1
            yield chunk

    def report(self, stream: BinaryIO) -> dict[str, Any]:
        """The input's completeness, for the stats report and the ledger."""
        frames = None
        if isinstance(stream, DecompressingReader) and stream.compression.name == "zstd":
            frames = stream.units
        if not self.ends_with_newline:
            verdict = "suspect: the last line has no newline (a download cut inside a line?)"
        elif frames is not None and frames > 1:
            verdict = f"probably: {frames} whole zstd frames; a cut exactly between frames cannot be seen"
        else:
            verdict = "yes"
        return {
            "lines": self.lines,
            "ends_with_newline": self.ends_with_newline,
            "zstd_frames": frames,
            "complete": verdict,
        }


def skip_lines(chunks: Iterable[LineChunk], done: int) -> Iterator[LineChunk]:
    """The chunks without lines 1..done (already processed by an earlier, interrupted run)."""
    for chunk in chunks:
        lines = chunk.data.count(b"\n") + (not chunk.data.endswith(b"\n"))
        if chunk.first_line + lines - 1 <= done:
            continue
        cut = 0
        for _ in range(done - chunk.first_line + 1):
            cut = chunk.data.index(b"\n", cut) + 1
        yield LineChunk(max(chunk.first_line, done + 1), chunk.data[cut:])


def iter_lines(chunk: LineChunk) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its newline) for every line of the chunk, blank ones included."""
    lines = chunk.data.split(b"\n")
    if chunk.data.endswith(b"\n"):
        lines.pop()
    if chunk.first_line == 1 and lines and lines[0].startswith(UTF8_BOM):
        # Editors on Windows start UTF-8 files with a byte-order mark; it is not part of the first record.
        lines[0] = lines[0][len(UTF8_BOM) :]
    for offset, line in enumerate(lines):
        yield chunk.first_line + offset, line.rstrip(b"\r")


def parse_chunk(
    chunk: LineChunk, input_format: str, stats: StageStats
) -> tuple[list[Comment], list[QuarantinedLine]]:
    """Parse every line of a chunk; unusable lines are quarantined with a reason, blank ones counted."""
    parse_line = _parse_json_line if input_format == "ndjson" else _parse_text_line
    comments: list[Comment] = []
    quarantined: list[QuarantinedLine] = []
    blank = 0
    # The loop runs once per input line: counts are kept in locals and added once per chunk.
    for line_number, line in iter_lines(chunk):
        if not line or line.isspace():
            blank += 1
            continue
        result = parse_line(line_number, line)
        if isinstance(result, QuarantinedLine):
            stats.drop(f"quarantined:{result.reason}")
            quarantined.append(result)
        else:
            comments.append(result)
    stats.total += len(comments) + len(quarantined) + blank
    stats.forwarded += len(comments)
    if blank:
        stats.drop("blank_line", blank)
    return comments, quarantined


def _unreadable(line_number: int, line: bytes, reason: str, detail: str) -> QuarantinedLine:
    """A line that could not be parsed: its text is not kept, since nothing in it can be told apart as a
    username (an author field in single quotes, cut short, of any shape); its size and hash are, to find
    and check it in the dump."""
    return QuarantinedLine(line_number, reason, detail, None, len(line), hashlib.sha256(line).hexdigest())


def _unusable(
    line_number: int, line: bytes, record: dict[str, Any], reason: str, detail: str
) -> QuarantinedLine:
    """A JSON object that cannot be used: kept for repair, with every author field redacted."""
    raw = orjson.dumps(redact_authors(record)).decode()
    return QuarantinedLine(line_number, reason, mask_user_mentions(detail), raw, len(line))


def redact_authors(record: Any) -> Any:
    """The parsed record with the value of every key that can name a person replaced by "<redacted>", in
    place, at any depth: a quarantine file keeps what is needed to fix a line, not who wrote or moderated
    it. Such a key contains "author" (`author`, `author_fullname`, an `author` object), ends in "_by"
    (`banned_by`, `approved_by`, `mod_reason_by`) or holds reports (`mod_reports`, `user_reports`, whose
    entries name moderators); keys are compared after removing invisible characters and mapping letters
    that look Latin to Latin, so `au\u200bthor` or a Cyrillic "а" in `author` are redacted too. A
    username written in a text (`u/name`) is masked, and so is a profile's subreddit (`u_name`)."""
    pending = [record]
    while pending:  # not recursive: a line may nest a thousand levels deep
        node = pending.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in children:
            if isinstance(key, str) and _names_a_person(key):
                node[key] = REDACTED
            elif isinstance(value, dict | list):
                pending.append(value)
            elif isinstance(value, str):
                node[key] = masked_field(key, value)
    return record


def _names_a_person(key: str) -> bool:
    visible = "".join(c for c in unicodedata.normalize("NFKC", key) if unicodedata.category(c) != "Cf")
    folded = visible.casefold().translate(LATIN_LOOKALIKES)
    return "author" in folded or folded.endswith("_by") or folded.endswith("reports")


def _profile_masked(subreddit: str | None) -> str | None:
    return None if subreddit is None else mask_profile_subreddit(subreddit)


def _shown(value: Any) -> str:
    """A bad value as a quarantine detail may show it: scalars as they are, containers by their type only
    (they may hold a name)."""
    return repr(value) if not isinstance(value, dict | list) else f"a JSON {type(value).__name__}"


def _parse_text_line(line_number: int, line: bytes) -> Comment | QuarantinedLine:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return _unreadable(line_number, line, "invalid_utf8", str(error))
    return Comment(comment_id=str(line_number), body=text, line_number=line_number)


def _parse_json_line(line_number: int, line: bytes) -> Comment | QuarantinedLine:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        reason = "invalid_utf8" if "UTF-8" in str(error) else "invalid_json"
        return _unreadable(line_number, line, reason, str(error))
    if not isinstance(record, dict):
        return _unreadable(line_number, line, "not_an_object", f"a JSON {type(record).__name__}")
    body = record["body"] if "body" in record else record.get("text")
    if type(body) is not str:
        return _unusable(line_number, line, record, "missing_body", "no string field 'body' (or 'text')")
    created = _as_int(record.get("created_utc"))
    if created is False:
        return _unusable(line_number, line, record, "bad_created_utc", _shown(record.get("created_utc")))
    return Comment(
        comment_id=_as_text(record.get("id")) or str(line_number),
        body=body,
        line_number=line_number,
        author=_as_text(record.get("author")),
        link_id=_as_text(record.get("link_id")),
        subreddit=_profile_masked(_as_text(record.get("subreddit"))),
        created_utc=created,
    )


def _as_text(value: object) -> str | None:
    if type(value) is str:
        return value or None
    return None if value is None else str(value)


def _as_int(value: object) -> int | bool | None:
    """Older dumps store `created_utc` as a string. Returns False when the value is not a number, or not
    one a 64-bit integer column can hold ("inf", 1e20)."""
    if type(value) is int:
        return value if INT64_MIN <= value <= INT64_MAX else False
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return False
    try:
        number = value if isinstance(value, int) else int(float(str(value)))
    except (ValueError, OverflowError):
        return False
    return number if INT64_MIN <= number <= INT64_MAX else False
