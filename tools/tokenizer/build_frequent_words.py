"""Rebuild `frequent_words.tsv`: the words, as written between spaces, that the tokenizer meets most.

spaCy's tokenizer keeps a cache of the words it has split (a word with its punctuation, "him,"), but it
adds nothing to it inside a memory zone, and extraction processes every chunk of input inside one.
`knowref60k.extract.nlp.Pipeline` therefore splits these words once when it loads, outside any zone, so
that the cache holds the words that matter (docs/decisions.md, "Tokenizer warm-up").

The script counts the space-separated words of the cleaned paragraphs that hold a target pronoun (the
paragraphs that extraction goes on to split) in the second half of the Reddit sample, so that the first
half can measure the gain on text the list has not seen; words seen at least `--min-count` times are
written, most frequent first. Only single words and counts, no text.

    .venv/bin/python tools/tokenizer/build_frequent_words.py [--reddit FILE] [--skip LINES] [--min-count N]
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterator
from pathlib import Path

from knowref60k.core.config import ExtractConfig
from knowref60k.core.stage import chain
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.pipeline import STAGES
from knowref60k.extract.records import LineBatch
from knowref60k.extract.stages.prefilter import Prefilter
from knowref60k.ingest.readers import iter_line_chunks, open_input

REPO = Path(__file__).resolve().parents[2]
# What this script builds lives beside its sources and manifest in data/.
HERE = REPO / "data" / "tokenizer"
REDDIT_SAMPLE = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
SKIP_LINES = 500_000
MIN_COUNT = 5


def paragraphs_with_a_pronoun(reddit: Path, skip: int, model: str) -> Iterator[str]:
    """The paragraphs that pass extraction's stages up to the pronoun prefilter, after `skip` lines."""
    context = ExtractContext(ExtractConfig(), model)
    stages = STAGES[: STAGES.index(Prefilter) + 1]
    seen = 0
    with open_input(reddit) as (_raw, stream):
        for chunk in iter_line_chunks(stream, reddit.name):
            seen += chunk.data.count(b"\n")
            if seen <= skip:
                continue
            for paragraph in chain([stage(context) for stage in stages], [LineBatch("ndjson", chunk)]):
                yield paragraph.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reddit", type=Path, default=REDDIT_SAMPLE)
    parser.add_argument("--skip", type=int, default=SKIP_LINES, help="lines to skip (whole chunks)")
    parser.add_argument("--min-count", type=int, default=MIN_COUNT)
    parser.add_argument("--model", help="spaCy pipeline (default: the project's default)")
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    for text in paragraphs_with_a_pronoun(args.reddit, args.skip, resolve_model_name(args.model)):
        counts.update(text.split())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    rows = [f"{word}\t{count}" for word, count in ranked if count >= args.min_count]
    target = HERE / "frequent_words.tsv"
    target.write_text("word\tcount\n" + "\n".join(rows) + "\n", encoding="utf-8")
    print(f"{target.name}: {len(rows)} words from {args.reddit} after line {args.skip:,}")


if __name__ == "__main__":
    main()
