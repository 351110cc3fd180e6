"""Rebuild `person_priors.tsv`: how often the spaCy model calls each capitalised word a person.

A model reading one sentence confuses a rare given name with an organisation ("Julia" as ORG) and takes
a town or a company for a person ("Houston", "Marvel") now and then. Over a million comments the
errors average out: a word the model calls PERSON in most of its hundreds of contexts is a name, one
it calls a place or organisation in most of them is not. This script runs the model's named-entity
recogniser over every paragraph of the Reddit sample and counts, for every capitalised word inside a
sentence (not first in it), the contexts where it is part of a PERSON entity, of another entity type,
or of none. Words seen at least `--min-occurrences` times are written; only counts, no text.

    .venv/bin/python tools/names/build_person_priors.py [--reddit FILE] [--model NAME] [--every N]
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterator
from pathlib import Path

import orjson
import spacy

from knowref60k.extract.cleaning import clean_text
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input

REPO = Path(__file__).resolve().parents[2]
# What this script builds lives beside its sources and manifest in data/.
HERE = REPO / "data" / "names"
REDDIT_SAMPLE = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
MIN_OCCURRENCES = 5
# The recogniser reads ~500 comments a second on two cores: a fifth of the sample takes about 7 minutes.
EVERY = 5
KINDS = ("person", "other_entity", "no_entity")


def paragraphs(reddit: Path, every: int) -> Iterator[str]:
    """The cleaned paragraphs of every `every`-th comment."""
    with open_input(reddit) as (_raw, stream):
        for chunk in iter_line_chunks(stream, reddit.name):
            for number, line in iter_lines(chunk):
                if number % every:
                    continue
                body = orjson.loads(line).get("body")
                if isinstance(body, str):
                    yield from clean_text(body)


def count_entities(texts: Iterator[str], model: str, processes: int) -> dict[str, collections.Counter[str]]:
    nlp = spacy.load(model, exclude=["parser", "lemmatizer", "attribute_ruler", "tagger"])
    nlp.add_pipe("sentencizer", first=True)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for doc in nlp.pipe(texts, batch_size=512, n_process=processes):
        for token in doc:
            text = token.text
            if token.is_sent_start or len(text) < 2 or not text[0].isupper() or text.isupper():
                continue
            if doc[token.i - 1].text in {'"', "'", ":", "(", "-", "*"}:
                continue
            kind = KINDS[2] if not token.ent_type_ else KINDS[0] if token.ent_type_ == "PERSON" else KINDS[1]
            counts[text][kind] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reddit", type=Path, default=REDDIT_SAMPLE)
    parser.add_argument("--model", help="spaCy pipeline (default: the project's default)")
    parser.add_argument("--every", type=int, default=EVERY, help="read every N-th comment")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--min-occurrences", type=int, default=MIN_OCCURRENCES)
    args = parser.parse_args()
    model = resolve_model_name(args.model)
    counts = count_entities(paragraphs(args.reddit, args.every), model, args.processes)
    rows = [
        "\t".join((word, *(str(kinds[kind]) for kind in KINDS)))
        for word, kinds in sorted(counts.items())
        if sum(kinds.values()) >= args.min_occurrences
    ]
    target = HERE / "person_priors.tsv"
    target.write_text("word\t" + "\t".join(KINDS) + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    print(f"{target.name}: {len(rows)} words from every {args.every}th comment of {args.reddit} ({model})")


if __name__ == "__main__":
    main()
