"""A count out of a total, with its 95% Wilson score interval, rounded so that every machine writes the
same bytes into a release."""

from __future__ import annotations

import math
from typing import Any

# The standard normal's 97.5th percentile: a two-sided 95% interval.
Z95 = 1.959963984540054
# Shares and bounds keep 4 decimals (a hundredth of a percentage point): finer digits would carry only
# the last bits in which two machines' arithmetic may differ.
DIGITS = 4


def wilson_interval(count: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of the share count / total: unlike the normal approximation it stays
    inside [0, 1] and is not empty at 0 or `total` successes, which matters on small samples."""
    if total <= 0 or not 0 <= count <= total:
        raise ValueError(f"no share: {count} of {total}")
    share = count / total
    squared = z * z
    centre = (share + squared / (2 * total)) / (1 + squared / total)
    half = z * math.sqrt(share * (1 - share) / total + squared / (4 * total * total)) / (1 + squared / total)
    return round(max(0.0, centre - half), DIGITS), round(min(1.0, centre + half), DIGITS)


def proportion(count: int, total: int) -> dict[str, Any]:
    """`count` of `total` as data: the share and its 95% Wilson interval, both None for a total of 0."""
    if total == 0:
        return {"count": 0, "of": 0, "share": None, "interval_95": None}
    return {
        "count": count,
        "of": total,
        "share": round(count / total, DIGITS),
        "interval_95": list(wilson_interval(count, total)),
    }
