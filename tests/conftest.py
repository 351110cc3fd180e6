from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import zstandard

from knowref60k.config import ExtractConfig
from knowref60k.extract import CandidateExtractor
from knowref60k.nlp import resolve_model_name
from knowref60k.readers import open_input

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REDDIT = SHARED / "data" / "reddit"
# Prefect reads these when it is first imported: keep its state inside the repo, and quiet.
os.environ.setdefault("PREFECT_HOME", str(REPO / ".prefect"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def shared_file(relative: str) -> Path:
    """A file under ../shared; the test is skipped, saying which file is missing, when it is absent."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared data missing: {path} (tests read it from ../shared beside the repo)")
    return path


@pytest.fixture(scope="session")
def extractor() -> CandidateExtractor:
    """The whole extraction with the real installed spaCy pipeline, loaded once per test session."""
    config = ExtractConfig()
    return CandidateExtractor(config, resolve_model_name(config.model))


def write_slice(source: Path, target: Path, skip: int, count: int) -> Path:
    """Lines skip+1 .. skip+count of a (zstd) dump, recompressed to `target` with Pushshift's window."""
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    with open_input(source) as (_raw, stream), target.open("wb") as handle:
        writer = zstandard.ZstdCompressor(compression_params=params).stream_writer(handle)
        for number, line in enumerate(io.BufferedReader(stream)):  # type: ignore[arg-type]
            if number >= skip + count:
                break
            if number >= skip:
                writer.write(line)
        writer.close()
    return target


@pytest.fixture(scope="session")
def reddit_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30,000 real comments from 2015-2019 (RC_sample_1M.zst): enough to yield candidates."""
    source = shared_file("data/reddit/RC_sample_1M.zst")
    return write_slice(source, tmp_path_factory.mktemp("slice") / "RC_sample_slice.zst", 600_000, 30_000)
