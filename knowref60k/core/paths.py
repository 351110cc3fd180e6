"""Where the project's own small data lives (name lists, bot lists), and the shared data beside it."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("KNOWREF60K_DATA_DIR", REPO_ROOT / "data"))
# The shared data beside the repository (dumps, benchmarks, models): read, never copied in.
SHARED_DIR = Path(os.environ.get("KNOWREF60K_SHARED_DIR", REPO_ROOT.parent / "shared"))
BENCHMARKS_DIR = SHARED_DIR / "data" / "benchmarks"
# The validity model (tools/scorer/build.py trains it) and its default threshold.
SCORER_DIR = DATA_DIR / "scorer"
VALIDITY_MODEL = SCORER_DIR / "validity_model.json"
# The fine-tuned encoder's low-rank adapters and head (tools/scorer/finetune.py), and its out-of-fold scores.
# The tuning part's candidates with their out-of-fold scores and verdicts: what labelling at each level is
# expected to cost and buy (`knowref60k eval` writes it).
CALIBRATION = SCORER_DIR / "calibration.json"
SPAN_ADAPTER = SCORER_DIR / "span_adapter.safetensors"
SPAN_OUT_OF_FOLD = SCORER_DIR / "span_out_of_fold.json"
# The same fit on a slice of the tuning part, scored on a slice of the held-back part: a quick rebuild check.
SPAN_SLICE_CHECK = SCORER_DIR / "span_slice_check.json"


def cache_folder() -> Path:
    """The user's cache folder (`$XDG_CACHE_HOME/knowref60k`): what is slow to compute and safe to
    compute again, each entry named by a hash of everything it depends on."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "knowref60k"
