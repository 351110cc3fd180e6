"""Where the project's own small data lives (name lists, bot lists)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("KNOWREF60K_DATA_DIR", REPO_ROOT / "data"))
