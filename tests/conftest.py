from __future__ import annotations

from pathlib import Path

import pytest

from knowref60k.config import ExtractConfig
from knowref60k.extract import CandidateExtractor
from knowref60k.nlp import resolve_model_name

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REDDIT = SHARED / "data" / "reddit"


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
