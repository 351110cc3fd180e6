"""The same dump and config give, through the command line, the same release, byte for byte, as the
code gave when the digests in tests/golden/ were taken: a refactoring that changes nothing keeps them.
Only the manifest's code fingerprint, a hash of the release code's own source, is left out."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app
from knowref60k_annotation.votes import VOTE_SCHEMA
from tests.conftest import REPO
from tests.test_release import SENTENCES, comment, screened, vote

pytestmark = pytest.mark.integration
DIGESTS = REPO / "tests" / "golden" / "release.sha256.json"
CONFIG = """\
[prepare]
validity_threshold = 0.5

[labelling]
keep_at_least = 4

[cost]
person_hour_price = 20.0
currency = "EUR"
"""
CODE_FINGERPRINT = re.compile(rb'("code_fingerprint": ?)"[0-9a-f]+"')


def invoke(*arguments: str) -> None:
    result = CliRunner().invoke(app, list(arguments))
    assert result.exit_code == 0, result.output


def cli_release(folder: Path) -> Path:
    """Extract, prepare and release the handmade comments through `knowref60k`, with a config file and
    the same votes as the release tests."""
    folder.mkdir(parents=True, exist_ok=True)
    config, dump, run = folder / "config.toml", folder / "RC_2099-01.ndjson", folder / "run"
    config.write_text(CONFIG, encoding="utf-8")
    dump.write_bytes(b"".join(comment(n, sentence) for n, sentence in enumerate(SENTENCES)))
    invoke("extract", str(dump), "--out", str(run / "candidates"), "--config", str(config), "--workers", "1")
    candidates = sorted(str(path) for path in (run / "candidates").glob("*.candidates.parquet"))
    invoke("prepare", *candidates, "--out", str(run / "items"), "--config", str(config))
    items = pq.read_table(next((run / "items").glob("*.items.parquet"))).to_pylist()
    choices = ["antecedent1"] * 5, ["antecedent2"] * 4 + ["neither"], ["neither"] * 4 + ["antecedent1"]
    votes = [
        vote(annotator, choice, annotator + 1, item["candidate_id"])
        for item, pattern in zip(items, choices * 2, strict=True)
        for annotator, choice in enumerate(pattern)
    ]
    votes += screened([item["candidate_id"] for item in items])
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), folder / "votes.parquet")
    releases = folder / "releases"
    invoke(
        "release",
        "--version",
        "v1",
        "--run",
        str(run),
        "--votes",
        str(folder / "votes.parquet"),
        "--out",
        str(releases),
        "--config",
        str(config),
    )
    return releases / "v1"


def release_digests(release: Path) -> dict[str, str]:
    digests = {}
    for path in sorted(p for p in release.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            data = CODE_FINGERPRINT.sub(rb'\1"(left out)"', data)
        digests[path.relative_to(release).as_posix()] = hashlib.sha256(data).hexdigest()
    return digests


def test_the_release_is_byte_identical_to_the_pinned_one(tmp_path: Path) -> None:
    made = release_digests(cli_release(tmp_path))
    pinned = orjson.loads(DIGESTS.read_bytes())
    changed = sorted(name for name in made.keys() | pinned.keys() if made.get(name) != pinned.get(name))
    assert changed == [], f"files that differ: {changed}; the digests now: {orjson.dumps(made).decode()}"
