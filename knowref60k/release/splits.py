"""Deterministic splits by thread: every item of one Reddit thread goes to the same split, and an
item stays in its split when later releases add items (the split depends on the thread alone)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

SPLITS = ("train", "validation", "test")
# 80/10/10: test and validation stay large enough (thousands of items per year of dumps) for
# accuracy estimates within about +-1.5 points, while most items train.
DEFAULT_PROPORTIONS = {"train": 0.8, "validation": 0.1, "test": 0.1}
SALT = "knowref60k-split-v1"


def group_key(item: Mapping[str, Any]) -> str:
    """The thread (`link_id`), or the item itself when it has no thread id."""
    link_id = item.get("link_id")
    return f"thread:{link_id}" if link_id else f"item:{item['candidate_id']}"


def split_of(item: Mapping[str, Any], proportions: Mapping[str, float] = DEFAULT_PROPORTIONS) -> str:
    """The split whose share of [0, 1) holds the thread's hash."""
    digest = hashlib.sha256(f"{SALT}\x1f{group_key(item)}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64
    edge = 0.0
    for name in SPLITS:
        edge += proportions[name]
        if point < edge:
            return name
    return SPLITS[-1]
