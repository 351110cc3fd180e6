"""How far answers get that resolve nothing: simple baselines on two-option pronoun problems, from a
release's rows or a known benchmark's items, each scored as an accuracy with its 95% Wilson interval.

- `first_named`: the option mentioned first;
- `nearest_named`: the option with a mention closest to the pronoun (in characters, either side);
- `subject`: the option that is a grammatical subject in the spaCy parse (nsubj, nsubjpass, nsubj:pass);
- `local_context`: WinoGrande's local-context-only baseline, a linear classifier that sees only the
  words near the pronoun (`WINDOW` each side) filled with each option, cross-validated;
- `probe`: AFLite's linear probe on AFLite's features of the whole sentence, cross-validated.

An item a rule cannot decide (an option not found in the sentence, both or neither a subject) gets a
coin flip seeded by its id, so it scores chance, and is counted as `undecided`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from knowref60k.core.proportions import DIGITS, proportion
from knowref60k.core.records import Span
from knowref60k.debias.features import labels_of, ngram_features
from knowref60k.debias.linear import Array, fit
from knowref60k.debias.problems import Problem, twin_key
from knowref60k.overlap.benchmarks import BenchmarkItem
from knowref60k.overlap.index import BLANK

if TYPE_CHECKING:
    from spacy.tokens import Doc

    from knowref60k.extract.nlp import Pipeline

BASELINES = ("first_named", "nearest_named", "subject", "local_context", "probe")
SEED = 0
FOLDS = 5
# Words each side of the pronoun the local-context classifier sees: "permit because the _ feared
# violence ." is the clause around the pronoun, little of the rest.
WINDOW = 3
# Fewer items than this leave a fold's classifier a handful to learn from: its accuracy would say nothing.
FEWEST_TO_CLASSIFY = 20
# What stands in for a benchmark's blank when it is parsed: a noun phrase that fits where the pronoun
# stood ("because one feared", "the one feared", "one's").
BLANK_STAND_IN = "one"
# The parse needs only these; the tagger, the entity recogniser and the rest are not run.
PARSE_COMPONENTS = ("tok2vec", "parser")


@dataclass(frozen=True)
class Choice:
    """A two-option problem as the baselines see it: the text with the pronoun (or a stand-in for the
    blank), every mention of each option, and the right option."""

    item_id: str
    text: str
    pronoun: Span
    options: tuple[str, str]
    mentions: tuple[tuple[Span, ...], tuple[Span, ...]]
    label: int
    # Items that stay in one fold of the cross-validation: a thread, or a benchmark's twins.
    group: str

    def filled(self) -> tuple[str, str]:
        before, after = self.text[: self.pronoun.start], self.text[self.pronoun.end :]
        return before + self.options[0] + after, before + self.options[1] + after


def mentions_of(text: str, phrase: str, pronoun: Span) -> tuple[Span, ...]:
    """Every whole-word occurrence of `phrase` in `text` (case aside, a plural "s" or "es" allowed: the
    benchmarks' options are often the singular) outside the pronoun; when there is none, those of its
    last word ("the suitcase" in "the brown suitcase")."""
    for wanted in (phrase, phrase.split()[-1] if phrase.split() else phrase):
        pattern = re.compile(rf"(?<![\w'-]){re.escape(wanted)}(?:e?s)?(?![\w-])", re.IGNORECASE)
        found = tuple(
            Span(match.start(), match.end())
            for match in pattern.finditer(text)
            if match.end() <= pronoun.start or match.start() >= pronoun.end
        )
        if found:
            return found
    return ()


def release_choice(row: Mapping[str, Any]) -> Choice:
    """A release row: its marked names and every other mention of them (the renaming replaced later
    mentions too), grouped by thread as the release's splits are."""
    text, pronoun = row["sentence"], Span(row["pronoun_start"], row["pronoun_end"])
    mentions = []
    for which in ("name1", "name2"):
        marked = Span(row[f"{which}_start"], row[f"{which}_end"])
        found = {marked, *mentions_of(text, row[which], pronoun)}
        mentions.append(tuple(sorted(found, key=lambda span: span.start)))
    return Choice(
        row["id"],
        text,
        pronoun,
        (row["name1"], row["name2"]),
        (mentions[0], mentions[1]),
        int(row["label"]),
        row.get("link_id") or row["id"],
    )


def benchmark_choice(item: BenchmarkItem) -> Choice:
    """A benchmark item: the blank stands in for the pronoun; twins (the same options and opening) are
    one group."""
    if item.answer is None:
        raise ValueError(f"{item.benchmark}: item {item.item_id} has no answer")
    start = item.sentence.index(BLANK)
    text = item.sentence[:start] + BLANK_STAND_IN + item.sentence[start + len(BLANK) :]
    pronoun = Span(start, start + len(BLANK_STAND_IN))
    options = (item.option1, item.option2)
    mentions = (mentions_of(text, options[0], pronoun), mentions_of(text, options[1], pronoun))
    return Choice(
        item.item_id, text, pronoun, options, mentions, item.answer, twin_key(options, item.sentence)
    )


def first_named(choice: Choice) -> int | None:
    if not all(choice.mentions):
        return None
    first, second = (spans[0].start for spans in choice.mentions)
    return None if first == second else int(second < first)


def _gap(span: Span, pronoun: Span) -> int:
    return max(pronoun.start - span.end, span.start - pronoun.end, 0)


def nearest_named(choice: Choice) -> int | None:
    if not all(choice.mentions):
        return None
    first, second = (min(_gap(span, choice.pronoun) for span in spans) for spans in choice.mentions)
    return None if first == second else int(second < first)


def subject_of(doc: Doc, choice: Choice) -> int | None:
    """The option whose first mention's head word is a nominal subject, when exactly one is."""
    subjects = []
    for spans in choice.mentions:
        span = doc.char_span(spans[0].start, spans[0].end, alignment_mode="expand") if spans else None
        subjects.append(span is not None and span.root.dep_.startswith("nsubj"))
    return subjects.index(True) if subjects.count(True) == 1 else None


def subjects(choices: Sequence[Choice], pipeline: Pipeline) -> list[int | None]:
    """`subject_of` every choice, its text parsed once with the pipeline's parser."""
    nlp = pipeline.nlp
    unused = [name for name in nlp.pipe_names if name not in PARSE_COMPONENTS]
    docs = nlp.pipe((choice.text for choice in choices), disable=unused, batch_size=256)
    return [subject_of(doc, choice) for doc, choice in zip(docs, choices, strict=True)]


def local_context(choice: Choice) -> Problem:
    """The `WINDOW` words each side of the pronoun, filled with each option: all the classifier sees."""
    before = choice.text[: choice.pronoun.start].split()[-WINDOW:]
    after = choice.text[choice.pronoun.end :].split()[:WINDOW]
    filled = tuple(" ".join([*before, option, *after]) for option in choice.options)
    return Problem(choice.item_id, (filled[0], filled[1]), choice.label, choice.group)


def whole_sentence(choice: Choice) -> Problem:
    """AFLite's problem: the whole sentence filled with each option."""
    return Problem(choice.item_id, choice.filled(), choice.label, choice.group)


def folds_of(groups: Sequence[str], folds: int, seed: int) -> Array:
    """Each item's fold: whole groups, dealt out in a seeded random order (the same on every machine)."""
    names, group_of = np.unique(np.array(groups, dtype=str), return_inverse=True)
    order = np.random.default_rng(seed).permutation(len(names))
    return np.asarray((order % folds)[group_of])


def cross_validated(problems: Sequence[Problem], seed: int = SEED) -> list[int] | None:
    """Each problem's prediction by a linear probe on AFLite's features (hashed word 1-2-grams) trained on
    the other folds; None when there are too few problems or groups to make `FOLDS` folds."""
    groups = [problem.group for problem in problems]
    if len(problems) < FEWEST_TO_CLASSIFY or len(set(groups)) < FOLDS:
        return None
    features, labels = ngram_features(problems), labels_of(problems)
    fold = folds_of(groups, FOLDS, seed)
    predictions = np.zeros(len(problems), dtype=np.int8)
    for held_out in range(FOLDS):
        test, train = np.flatnonzero(fold == held_out), np.flatnonzero(fold != held_out)
        predictions[test] = fit(features[train], labels[train]).predict(features[test])
    return [int(prediction) for prediction in predictions]


def coin(item_id: str, seed: int) -> int:
    """A fair coin flip fixed by the item's id and the seed."""
    return hashlib.sha256(f"knowref60k-baseline\x1f{seed}\x1f{item_id}".encode()).digest()[0] & 1


def scored(choices: Sequence[Choice], predictions: Sequence[int | None], seed: int = SEED) -> dict[str, Any]:
    """Accuracy of the predictions with its 95% interval; undecided items get their coin flip."""
    correct = undecided = 0
    for choice, prediction in zip(choices, predictions, strict=True):
        if prediction is None:
            undecided += 1
            prediction = coin(choice.item_id, seed)
        correct += prediction == choice.label
    return {**proportion(correct, len(choices)), "undecided": undecided}


def baselines(
    choices: Sequence[Choice], pipeline: Pipeline | None, seed: int = SEED
) -> dict[str, dict[str, Any] | None]:
    """Every baseline's score on the choices; None for one that could not run (no parser, or too few
    items for the classifiers' folds)."""
    predictions: dict[str, Sequence[int | None] | None] = {
        "first_named": [first_named(choice) for choice in choices],
        "nearest_named": [nearest_named(choice) for choice in choices],
        "subject": subjects(choices, pipeline) if pipeline is not None else None,
        "local_context": cross_validated([local_context(choice) for choice in choices], seed),
        "probe": cross_validated([whole_sentence(choice) for choice in choices], seed),
    }
    return {name: _scored_or_none(choices, predictions[name], seed) for name in BASELINES}


def _scored_or_none(
    choices: Sequence[Choice], predictions: Sequence[int | None] | None, seed: int
) -> dict[str, Any] | None:
    return scored(choices, predictions, seed) if predictions is not None else None


def label_balance(choices: Sequence[Choice]) -> dict[str, Any]:
    """How many items each option answers, and the share a constant answer of the commoner one gets."""
    second = sum(choice.label for choice in choices)
    first = len(choices) - second
    return {
        "option1": first,
        "option2": second,
        "majority_share": round(max(first, second) / len(choices), DIGITS) if choices else None,
    }
