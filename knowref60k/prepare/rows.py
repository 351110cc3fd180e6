"""What the prepare stages pass along: a candidate, then an item, as read from and written to Parquet."""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]
