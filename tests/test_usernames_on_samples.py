"""No Reddit username from the shared samples reaches an item (what annotators see and releases are cut
from) or a quarantine file: every comment of both samples that names an account, or was posted on a
profile, goes through the pipeline flow, once as it is and once damaged so that it is quarantined, and
every file the run writes is scanned but the extraction's candidates, which keep what they found."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
import zstandard

from knowref60k.core.privacy import USER_MENTION, names_a_user
from knowref60k.settings.effective import RunConfig
from knowref60k_flows.pipeline import pipeline_flow
from tests.conftest import shared_file

SAMPLES = ("RC_sample_1M.zst", "RC_sample_B.zst")
# A subreddit field naming a profile (the subreddit of a comment posted on a user's profile), unmasked.
PROFILE_FIELD = re.compile(r'subreddit\\?":\s*\\?"u_(?!<redacted>)')


def comments_naming_an_account(path: Path) -> Iterator[dict[str, object]]:
    with path.open("rb") as raw:
        reader = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(raw)
        for line in io.BufferedReader(reader, 2**20):
            if b"u/" in line or b"U/" in line or b"u_" in line:
                record = orjson.loads(line)
                body, subreddit = record.get("body"), record.get("subreddit")
                on_a_profile = isinstance(subreddit, str) and subreddit.startswith("u_")
                if isinstance(body, str) and (names_a_user(body) or on_a_profile):
                    yield record


def texts(out: Path) -> Iterator[tuple[Path, str]]:
    """Every file the run wrote but the candidates, as text: Parquet tables row by row, the rest as is."""
    for path in sorted(
        p for p in out.rglob("*") if p.is_file() and not p.name.endswith(".candidates.parquet")
    ):
        if path.suffix == ".parquet":
            for row in pq.read_table(path).to_pylist():
                yield path, orjson.dumps(row, default=str).decode()
        else:
            yield path, path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.integration
def test_no_username_from_the_shared_samples_reaches_an_item_or_a_quarantine_file(tmp_path: Path) -> None:
    dump = tmp_path / "RC_mentions.ndjson"
    found = 0
    with dump.open("wb") as out:
        for sample in SAMPLES:
            for record in comments_naming_an_account(shared_file(f"data/reddit/{sample}")):
                found += 1
                out.write(orjson.dumps(record) + b"\n")
                damaged = {**record, "id": f"{record.get('id')}-damaged", "created_utc": [record["body"]]}
                out.write(orjson.dumps(damaged) + b"\n")
    run = pipeline_flow([str(dump)], str(tmp_path / "out"), RunConfig.load())
    (extracted,) = run["extract"]["files"]
    stats = orjson.loads(Path(extracted["stats_path"]).read_bytes())["stats"]["stages"]
    assert stats["read"]["dropped"] == {"quarantined:bad_created_utc": found}
    # Candidates that named an account: dropped before labelling, so the filter had work.
    assert run["prepare"]["stats"]["stages"]["user_mention"]["dropped"]["names_a_user"] > 0
    written = list(texts(tmp_path / "out"))
    assert any(path.name.endswith(".quarantine.jsonl") for path, _ in written)
    assert [(path.name, m.group()) for path, text in written for m in USER_MENTION.finditer(text)] == []
    assert [path.name for path, text in written if PROFILE_FIELD.search(text)] == []
