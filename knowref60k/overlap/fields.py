"""The columns the overlap audit adds to items and releases."""

from __future__ import annotations

import pyarrow as pa

OVERLAP_FIELDS: list[tuple[pa.Field, str]] = [
    (
        pa.field("overlap_bm25", pa.float64(), nullable=False),
        "BM25 score of the closest sentence of the overlap corpus (0: none passes the phrase query).",
    ),
    (pa.field("overlap_hit", pa.string()), "That closest corpus sentence (null when the score is 0)."),
    (
        pa.field("benchmark_overlap", pa.string()),
        "The known benchmark this item shares a 13-gram with (wsc273, dpr-train, dpr-test, "
        "winogrande-dev), else null.",
    ),
]
