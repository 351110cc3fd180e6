"""The columns of a release, with their descriptions and their Hugging Face features."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from knowref60k.overlap.fields import OVERLAP_FIELDS

LABEL_NAMES = ("name1", "name2")

FIELDS: list[tuple[pa.Field, str]] = [
    (
        pa.field("id", pa.string(), nullable=False),
        "Stable item id (hash of source dump, comment id, position, sentence).",
    ),
    (
        pa.field("sentence", pa.string(), nullable=False),
        "The sentence with both antecedents replaced by new names.",
    ),
    (
        pa.field("name1", pa.string(), nullable=False),
        "The name that replaced the first antecedent in the text.",
    ),
    (pa.field("name1_start", pa.int32(), nullable=False), "Character offset of name1 in `sentence`."),
    (pa.field("name1_end", pa.int32(), nullable=False), "End offset of name1 (exclusive)."),
    (pa.field("name2", pa.string(), nullable=False), "The name that replaced the second antecedent."),
    (pa.field("name2_start", pa.int32(), nullable=False), "Character offset of name2 in `sentence`."),
    (pa.field("name2_end", pa.int32(), nullable=False), "End offset of name2 (exclusive)."),
    (
        pa.field("pronoun", pa.string(), nullable=False),
        "The pronoun to resolve (he, she, him, her, his, hers).",
    ),
    (pa.field("pronoun_start", pa.int32(), nullable=False), "Character offset of the pronoun in `sentence`."),
    (pa.field("pronoun_end", pa.int32(), nullable=False), "End offset of the pronoun (exclusive)."),
    (
        pa.field("label", pa.int64(), nullable=False),  # int64: the Arrow type of a datasets ClassLabel
        "The referent: 0 = name1, 1 = name2 (a ClassLabel in `datasets`).",
    ),
    (
        pa.field("annotation_strength", pa.int8(), nullable=False),
        "How many resolvers chose the label when the item was decided (4; 4 or 5 under the fifth-vote rule).",
    ),
    (
        pa.field("votes", pa.list_(pa.string()), nullable=False),
        "The resolution votes that decided the item: name1, name2 or neither, in the order cast.",
    ),
    (
        pa.field("annotators", pa.list_(pa.string()), nullable=False),
        "Opaque ids of the resolvers who cast them, in the same order.",
    ),
    (
        pa.field("late_votes", pa.int8(), nullable=False),
        "Resolution votes cast after the item was decided (kept in the votes file, not counted here).",
    ),
    (
        pa.field("label_posterior", pa.float64()),
        "Dawid-Skene posterior of the label over all resolution votes (crowd-kit); filter on it for a "
        "stricter subset.",
    ),
    (
        pa.field("screeners", pa.list_(pa.string()), nullable=False),
        "Opaque ids of the screeners who judged the original sentence valid; never one of `annotators`.",
    ),
    (
        pa.field("simulated_votes", pa.int8(), nullable=False),
        "How many of the votes (screening and resolution) came from simulated annotators.",
    ),
    (
        pa.field("comment_id", pa.string(), nullable=False),
        "Reddit comment id (or the line number for text inputs).",
    ),
    (pa.field("link_id", pa.string()), "Reddit thread id (t3_...): the split is decided per thread."),
    (pa.field("subreddit", pa.string()), "Subreddit of the comment."),
    (pa.field("created_utc", pa.int64()), "Comment time, Unix seconds."),
    (pa.field("source_file", pa.string(), nullable=False), "The dump the comment came from."),
]
# With `release --debias`: AFLite's verdict on every item (knowref60k.debias).
AFLITE_FIELDS: list[tuple[pa.Field, str]] = [
    (
        pa.field("aflite_score", pa.float64()),
        "Share of AFLite's held-out linear models that predicted the label (last round the item was in).",
    ),
    (pa.field("aflite_removed_round", pa.int32()), "The AFLite round that removed the item; null if kept."),
    (pa.field("aflite_kept", pa.bool_()), "Whether the item is in the `debiased` config."),
]
HF_FEATURES = {
    "label": {"names": list(LABEL_NAMES), "_type": "ClassLabel"},
    "votes": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
    "annotators": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
    "screeners": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
}
_HF_DTYPES = {
    pa.string(): "string",
    pa.int8(): "int8",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.float64(): "float64",
    pa.bool_(): "bool",
}


def release_fields(audited: bool, debiased: bool = False) -> list[tuple[pa.Field, str]]:
    """The release's columns: the overlap audit's and AFLite's follow when the release has them."""
    return FIELDS + (OVERLAP_FIELDS if audited else []) + (AFLITE_FIELDS if debiased else [])


def release_schema(audited: bool, debiased: bool = False) -> pa.Schema:
    return pa.schema([f for f, _ in release_fields(audited, debiased)])


def hf_features(audited: bool = False, debiased: bool = False) -> dict[str, Any]:
    features: dict[str, Any] = {}
    for f, _ in release_fields(audited, debiased):
        features[f.name] = HF_FEATURES.get(
            f.name, {"dtype": _HF_DTYPES.get(f.type, "string"), "_type": "Value"}
        )
    return features
