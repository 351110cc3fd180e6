"""Where the project's own small data lives (installed with the package), and where a user's state goes."""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

HOME_VARIABLE = "KNOWREF60K_HOME"
# Installed with the package (`knowref60k_data`, the checkout's data/ folder): found wherever the package
# is, never through a checkout's layout. KNOWREF60K_DATA_DIR points the code at another copy.
DATA_DIR = Path(os.environ.get("KNOWREF60K_DATA_DIR") or str(files("knowref60k_data")))
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


def home() -> Path:
    """The folder of a user's state (outputs, the Label Studio folder, `.env`, the Prefect home):
    `KNOWREF60K_HOME` (`knowref60k --home`), else the working folder."""
    return Path(os.environ.get(HOME_VARIABLE) or Path.cwd()).absolute()


def cache_folder() -> Path:
    """The user's cache folder (`$XDG_CACHE_HOME/knowref60k`): what is slow to compute and safe to
    compute again, each entry named by a hash of everything it depends on."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "knowref60k"
