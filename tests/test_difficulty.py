"""The card's "How right and how hard" section: the interval, each baseline on hand-made items whose
answer is known, the labels' agreement with the judged referents, releases whose every figure is counted
again from the released rows, and the shipped benchmark figures recomputed from ../shared."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import knowref60k
from knowref60k.core.config import TARGET_PRONOUNS, is_installed
from knowref60k.core.errors import UserError
from knowref60k.core.io import ITEM_SCHEMA
from knowref60k.core.proportions import Z95, proportion, wilson_interval
from knowref60k.core.records import Span
from knowref60k.debias.baselines import (
    Choice,
    benchmark_choice,
    coin,
    cross_validated,
    first_named,
    local_context,
    nearest_named,
    release_choice,
    scored,
    subject_of,
    whole_sentence,
)
from knowref60k.debias.features import ngram_features
from knowref60k.debias.linear import fit
from knowref60k.overlap.benchmarks import BenchmarkItem
from knowref60k.quality.referents import Referent, label_agreement, load_referents
from knowref60k.release.build import build_release
from knowref60k.release.difficulty import BENCHMARK_BASELINES, read_benchmark_baselines
from knowref60k.release.splits import SPLITS
from knowref60k_annotation.votes import VOTE_SCHEMA
from tests.conftest import REPO, missing_prerequisite, shared_file
from tests.test_debias import run_with_both_labels
from tests.test_release import screened, synthetic_run, vote

# ---- the interval ----


@pytest.mark.parametrize(("count", "total"), [(5, 10), (0, 10), (10, 10), (500, 1000), (3, 4), (1, 3)])
def test_the_wilson_interval_bounds_solve_its_quadratic(count: int, total: int) -> None:
    """Wilson's bounds are the shares p with (p - count/total)² = z² p (1 - p) / total."""
    share, z = count / total, Z95
    roots = sorted(np.roots([1 + z * z / total, -(2 * share + z * z / total), share * share]).real)
    low, high = wilson_interval(count, total)
    assert low == pytest.approx(max(roots[0], 0), abs=5e-5) and high == pytest.approx(roots[1], abs=5e-5)
    assert 0 <= low <= share <= high <= 1


def test_the_interval_by_hand_and_shares_of_nothing() -> None:
    # 5 of 10: centre .5, half-width 1.96 * sqrt(.025 + 1.96² / 400) / (1 + 1.96² / 10) = .2634
    assert wilson_interval(5, 10) == (0.2366, 0.7634)
    assert proportion(3, 4) == {"count": 3, "of": 4, "share": 0.75, "interval_95": [0.3006, 0.9544]}
    assert proportion(0, 0) == {"count": 0, "of": 0, "share": None, "interval_95": None}
    for count, total in ((0, 0), (11, 10), (-1, 10)):
        with pytest.raises(ValueError):
            wilson_interval(count, total)


# ---- each baseline on hand-made items ----


def row(
    sentence: str, names: tuple[str, str], pronoun: str, label: int, item_id: str = "r"
) -> dict[str, Any]:
    """A release row: each name's first occurrence is its marked span; the pronoun is its first
    whole-word occurrence after the two names' first words."""
    starts = [sentence.index(name) for name in names]
    after = max(starts)
    found = re.compile(rf"\b{pronoun}\b").search(sentence, after)
    assert found is not None
    return {
        "id": item_id,
        "sentence": sentence,
        **{f"name{i + 1}": names[i] for i in range(2)},
        **{f"name{i + 1}_start": starts[i] for i in range(2)},
        **{f"name{i + 1}_end": starts[i] + len(names[i]) for i in range(2)},
        "pronoun": pronoun,
        "pronoun_start": found.start(),
        "pronoun_end": found.end(),
        "label": label,
        "link_id": f"t3_{item_id}",
    }


def test_first_and_nearest_named_on_hand_made_rows() -> None:
    plain = release_choice(row("Anna called Beth because she was late.", ("Anna", "Beth"), "she", 0))
    assert (first_named(plain), nearest_named(plain)) == (0, 1)
    # The renaming replaced a later mention of Anna too: that mention is the nearest to the pronoun.
    repeated = release_choice(
        row("Anna told Beth that Anna's car broke, so she walked.", ("Anna", "Beth"), "she", 0)
    )
    assert repeated.mentions[0] == (Span(0, 4), Span(20, 24))
    assert (first_named(repeated), nearest_named(repeated)) == (0, 0)
    assert scored([plain, repeated], [first_named(plain), first_named(repeated)])["share"] == 1.0
    assert scored([plain, repeated], [nearest_named(plain), nearest_named(repeated)])["share"] == 0.5


def test_benchmark_options_are_found_by_phrase_plural_or_head_word() -> None:
    trophy = benchmark_choice(
        BenchmarkItem(
            "wsc273",
            "wsc-x",
            "The trophy doesn't fit into the brown suitcase because _ is too large.",
            "the trophy",
            "the suitcase",
            0,
        )
    )
    assert trophy.text == "The trophy doesn't fit into the brown suitcase because one is too large."
    assert trophy.mentions == ((Span(0, 10),), (Span(38, 46),))  # "the suitcase" by its head word
    assert (first_named(trophy), nearest_named(trophy)) == (0, 1)
    assert (
        trophy.filled()[0]
        == "The trophy doesn't fit into the brown suitcase because the trophy is too large."
    )
    tellers = benchmark_choice(
        BenchmarkItem("wsc273", "wsc-y", "He robbed one of the tellers and _ ran.", "teller", "robber", 1)
    )
    assert tellers.mentions[0] == (Span(21, 28),) and tellers.mentions[1] == ()
    assert first_named(tellers) is None and nearest_named(tellers) is None


def test_an_undecided_item_gets_its_own_seeded_coin_flip_and_is_counted() -> None:
    items = [Choice(f"u{n}", "x one y", Span(2, 5), ("a", "b"), ((), ()), n % 2, f"u{n}") for n in range(400)]
    found = scored(items, [None] * len(items))
    flips = [coin(item.item_id, 0) for item in items]
    assert found["undecided"] == 400 and found["count"] == sum(
        f == i.label for f, i in zip(flips, items, strict=True)
    )
    assert flips == [
        hashlib.sha256(f"knowref60k-baseline\x1f0\x1fu{n}".encode()).digest()[0] & 1 for n in range(400)
    ]
    assert 0.4 < found["share"] < 0.6 and 150 < sum(flips) < 250  # a fair coin
    assert [coin(item.item_id, 1) for item in items] != flips  # the seed changes the flips


def parsed(words: list[str], heads: list[int], deps: list[str]) -> Any:
    """A Doc with a given parse, built without loading a pipeline."""
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

    return Doc(Vocab(), words=words, spaces=[True] * len(words), heads=heads, deps=deps)


def choice_of(doc: Any, names: tuple[str, str], pronoun: str) -> Choice:
    text = doc.text
    spans = [Span(text.index(name), text.index(name) + len(name)) for name in names]
    start = text.index(f" {pronoun} ") + 1
    return Choice("s", text, Span(start, start + len(pronoun)), names, ((spans[0],), (spans[1],)), 0, "s")


def test_the_subject_baseline_reads_the_parse() -> None:
    words = ["Anna", "called", "Beth", "because", "she", "was", "late", "."]
    active = parsed(
        words, [1, 1, 1, 5, 5, 1, 5, 1], ["nsubj", "ROOT", "dobj", "mark", "nsubj", "advcl", "acomp", "punct"]
    )
    assert subject_of(active, choice_of(active, ("Anna", "Beth"), "she")) == 0
    words = ["Beth", "was", "called", "by", "Anna", "because", "she", "was", "late", "."]
    heads = [2, 2, 2, 2, 3, 7, 7, 2, 7, 2]
    for label in ("nsubjpass", "nsubj:pass"):  # ClearNLP's label and UD's
        deps = [label, "auxpass", "ROOT", "agent", "pobj", "mark", "nsubj", "advcl", "acomp", "punct"]
        passive = parsed(words, heads, deps)
        assert subject_of(passive, choice_of(passive, ("Anna", "Beth"), "she")) == 1
    words = ["Anna", "left", "and", "Beth", "stayed", "because", "she", "was", "ill", "."]
    both = parsed(
        words,
        [1, 1, 1, 4, 1, 7, 7, 4, 7, 1],
        ["nsubj", "ROOT", "cc", "nsubj", "conj", "mark", "nsubj", "advcl", "acomp", "punct"],
    )
    assert subject_of(both, choice_of(both, ("Anna", "Beth"), "she")) is None


def cue_rows(count: int, near: bool) -> list[dict[str, Any]]:
    """Rows whose label a cue word gives away: next to the pronoun, or at the far start of the sentence."""
    rows = []
    for n in range(count):
        cue = ("gladly", "sadly")[n % 2]
        sentence = (
            f"Anna met Beth at the long table in town {n}, but she {cue} left."
            if near
            else f"{cue.title()}, Anna met Beth at the long table in town {n}, but later that night she left."
        )
        rows.append(row(sentence, ("Anna", "Beth"), "she", n % 2, f"c{n}"))
    return rows


def test_the_local_context_classifier_sees_only_the_words_near_the_pronoun() -> None:
    near = [release_choice(r) for r in cue_rows(100, near=True)]
    far = [release_choice(r) for r in cue_rows(100, near=False)]
    assert local_context(near[0]).filled == ("town 0, but Anna gladly left.", "town 0, but Beth gladly left.")

    def accuracy(choices: list[Choice], problem: Any) -> float:
        predictions = cross_validated([problem(choice) for choice in choices])
        assert predictions is not None
        return float(scored(choices, predictions)["share"])

    assert accuracy(near, local_context) == accuracy(near, whole_sentence) == 1.0
    assert accuracy(far, whole_sentence) == 1.0
    assert accuracy(far, local_context) <= 0.6  # the cue is out of its window: nothing to learn
    assert cross_validated([whole_sentence(choice) for choice in near[:19]]) is None  # too few items


# ---- labels against the judged referents ----


def test_label_agreement_counts_judged_clear_agreeing_unclear_and_other_pairs() -> None:
    pair = ((0, 4), (9, 13))
    referents = {
        "a": Referent("a", "tune", "antecedent1", pair),
        "b": Referent("b", "tune", "antecedent2", pair),
        "c": Referent("c", "heldout", "unclear", pair),
        "d": Referent("d", "tune", "antecedent1", pair),
    }
    labels = [("a", 0), ("b", 0), ("c", 1), ("d", 0), ("x", 1)]
    spans = {"a": pair, "b": pair, "c": pair, "d": ((0, 3), (9, 13))}
    found = label_agreement(labels, referents, spans)
    assert {k: found[k] for k in ("items", "judged", "other_pair", "clear", "agree", "unclear")} == {
        "items": 5,
        "judged": 3,
        "other_pair": 1,
        "clear": 2,
        "agree": 1,
        "unclear": 1,
    }
    assert found["agreement"] == proportion(1, 2)
    without_spans = label_agreement(labels, referents)
    assert (without_spans["judged"], without_spans["clear"], without_spans["agree"]) == (4, 3, 2)
    with pytest.raises(ValueError, match="neither 0"):
        label_agreement([("a", 2)], referents)


def test_the_shipped_referents_load_with_the_judged_names() -> None:
    referents = load_referents()
    # data/eval/README.md, "The resolution gold set"
    assert len(referents) == 1796
    assert Counter(r.referent for r in referents.values()) == {
        "antecedent1": 906,
        "antecedent2": 773,
        "unclear": 117,
    }
    gold = {}
    for line in (REPO / "data" / "eval" / "reddit_gold.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        if record["label"] == "valid":
            gold[record["candidate_id"]] = (tuple(record["antecedent1"]), tuple(record["antecedent2"]))
    assert {cid: r.antecedents for cid, r in referents.items()} == gold


def test_a_bad_referent_line_is_one_error_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "referents.jsonl"
    good = (REPO / "data" / "eval" / "reddit_referents.jsonl").read_bytes().splitlines()[0]
    bad = orjson.dumps({**orjson.loads(good), "referent": "antecedent3"})
    path.write_bytes(good + b"\n" + bad + b"\n")
    with pytest.raises(UserError, match=rf"{re.escape(str(path))}, line 2: referent must be one of"):
        load_referents(path)


def test_a_missing_benchmark_baselines_file_is_an_error_saying_how_to_rebuild_it(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"benchmark_baselines\.py rebuilds it"):
        read_benchmark_baselines(tmp_path / "benchmark_baselines.json")
    shipped = read_benchmark_baselines()
    assert sorted(shipped["sets"]) == ["dpr-test", "winogrande-dev", "wsc273"]


# ---- releases: every figure counted again from the released rows ----


def released_rows(release: Path) -> list[dict[str, Any]]:
    return [row for split in SPLITS for row in knowref60k.load_release(release, split).to_pylist()]


def accuracy_cell(found: dict[str, Any]) -> str:
    low, high = found["interval_95"]
    undecided = f"; {found['undecided']:,} undecided" if found["undecided"] else ""
    return f"{found['share']:.1%} [{low:.1%}, {high:.1%}]{undecided}"


def counted(predictions: list[int | None], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy with undecided items flipped as the card says: sha256 of the seed and id, lowest bit."""
    correct = undecided = 0
    for prediction, released in zip(predictions, rows, strict=True):
        if prediction is None:
            undecided += 1
            prediction = (
                hashlib.sha256(f"knowref60k-baseline\x1f0\x1f{released['id']}".encode()).digest()[0] & 1
            )
        correct += prediction == released["label"]
    return {**proportion(correct, len(rows)), "undecided": undecided}


def occurrences(sentence: str, name: str) -> list[tuple[int, int]]:
    return [
        (m.start(), m.end())
        for m in re.finditer(rf"(?<![\w'-]){re.escape(name)}(?:e?s)?(?![\w-])", sentence, re.I)
    ]


def first_and_nearest(released: dict[str, Any]) -> tuple[int | None, int | None]:
    """Counted directly: whose name occurs first, and whose occurrence is fewest characters from the
    pronoun."""
    start, end = released["pronoun_start"], released["pronoun_end"]
    found = []
    for name in ("name1", "name2"):
        marked = (released[f"{name}_start"], released[f"{name}_end"])
        others = [
            o for o in occurrences(released["sentence"], released[name]) if o[1] <= start or o[0] >= end
        ]
        found.append(sorted({marked, *others}))
    firsts = [spans[0][0] for spans in found]
    gaps = [min(max(start - e, s - end, 0) for s, e in spans) for spans in found]
    first = None if firsts[0] == firsts[1] else int(firsts[1] < firsts[0])
    nearest = None if gaps[0] == gaps[1] else int(gaps[1] < gaps[0])
    return first, nearest


def check_section(release: Path, subject: bool) -> dict[str, Any]:
    """Label balance, first- and nearest-named counted from the rows, and the card stating them with the
    shipped benchmark figures; the manifest's figures returned."""
    rows = released_rows(release)
    facts = orjson.loads((release / "manifest.json").read_bytes())["difficulty"]
    card = (release / "README.md").read_text(encoding="utf-8")
    labels = Counter(r["label"] for r in rows)
    assert facts["label_balance"] == {
        "option1": labels[0],
        "option2": labels[1],
        "majority_share": round(max(labels.values()) / len(rows), 4),
    }
    assert (
        f"Of the {len(rows):,} kept items, {labels[0]:,} ({labels[0] / len(rows):.1%}) are labelled name1"
        in card
    )
    assert "**Chance** is 50%" in card
    predictions = [first_and_nearest(r) for r in rows]
    for position, name, title in (
        (0, "first_named", "first-named person"),
        (1, "nearest_named", "nearest-named person"),
    ):
        expected = counted([p[position] for p in predictions], rows)
        assert facts["baselines"][name] == expected, name
        benchmarks = read_benchmark_baselines()["sets"]
        cells = [accuracy_cell(expected)] + [
            accuracy_cell(benchmarks[b]["baselines"][name]) for b in ("wsc273", "dpr-test", "winogrande-dev")
        ]
        assert f"| {title} | " + " | ".join(cells) + " |" in card
    assert facts["benchmarks"] == read_benchmark_baselines()
    assert (facts["parser"] is not None) == subject and (facts["baselines"]["subject"] is not None) == subject
    return facts


def window(released: dict[str, Any], option: str) -> str:
    before = released["sentence"][: released["pronoun_start"]].split()[-3:]
    after = released["sentence"][released["pronoun_end"] :].split()[:3]
    return " ".join([*before, option, *after])


def classifier_predictions(rows: list[dict[str, Any]], filled: Any) -> list[int | None]:
    """The documented cross-validation, done again: 5 folds of whole threads, the sorted threads dealt
    out in a permutation seeded 0; AFLite's features and linear model."""
    from knowref60k.debias.problems import Problem

    problems = [Problem(r["id"], filled(r), r["label"], r["link_id"] or r["id"]) for r in rows]
    threads = sorted({problem.group for problem in problems})
    order = np.random.default_rng(0).permutation(len(threads))
    fold = np.array([order[threads.index(problem.group)] % 5 for problem in problems])
    features, labels = ngram_features(problems), np.array([p.label for p in problems])
    predictions: list[int | None] = [None] * len(rows)
    for held_out in range(5):
        train, test = np.flatnonzero(fold != held_out), np.flatnonzero(fold == held_out)
        for position, prediction in zip(
            test, fit(features[train], labels[train]).predict(features[test]), strict=True
        ):
            predictions[position] = int(prediction)
    return predictions


def classifier_accuracy(rows: list[dict[str, Any]], filled: Any) -> dict[str, Any]:
    return counted(classifier_predictions(rows, filled), rows)


def fill_pronoun(released: dict[str, Any]) -> tuple[str, str]:
    sentence, start, end = released["sentence"], released["pronoun_start"], released["pronoun_end"]
    return sentence[:start] + released["name1"] + sentence[end:], sentence[:start] + released[
        "name2"
    ] + sentence[end:]


def test_a_release_without_a_parser_reports_every_other_figure_and_says_so(tmp_path: Path) -> None:
    """A unit test cuts releases as a machine without a spaCy pipeline: the subject baseline is left out,
    the classifiers find the cue word planted in every fifth item."""
    run = run_with_both_labels(tmp_path / "run", 100)
    release = build_release(run, run / "votes.parquet", "v1", tmp_path / "releases").path
    facts = check_section(release, subject=False)
    rows = released_rows(release)
    card = (release / "README.md").read_text(encoding="utf-8")
    assert "| syntactic subject | n/a |" in card and "Parser: none installed: no subject baseline" in card
    local = classifier_accuracy(rows, lambda r: (window(r, r["name1"]), window(r, r["name2"])))
    probe = classifier_accuracy(rows, fill_pronoun)
    assert facts["baselines"]["local_context"] == local and facts["baselines"]["probe"] == probe
    # The probe learns the cue words planted in every fifth item.
    cued = [
        r["label"] == p
        for r, p in zip(rows, classifier_predictions(rows, fill_pronoun), strict=True)
        if re.search(r"\b(gladly|sadly)\b", r["sentence"])
    ]
    assert len(cued) == 20 and sum(cued) >= 18
    assert f"| linear probe (AFLite) | {accuracy_cell(probe)} |" in card
    # None of these items is a judged gold sentence.
    assert facts["referents"]["items"] == 100 and facts["referents"]["judged"] == 0


def gold_run(run: Path, gold_items: int = 48, others: int = 24) -> tuple[Path, dict[str, int], str]:
    """A pipeline folder whose first items are valid gold sentences (unrenamed: the names are the judged
    ones), the rest synthetic; each gold item labelled as judged except every fifth (flipped), unclear
    ones name2, and one gold item whose candidate took another span for its first person. Returns the
    folder, each item's label and that item's id."""
    synthetic_run(run, {f"t3_{n}": 1 for n in range(gold_items + others)})
    item_file = run / "items" / "RC_2099-01.items.parquet"
    rows = pq.read_table(item_file).to_pylist()
    referents = {
        r["candidate_id"]: r["referent"]
        for r in map(
            orjson.loads, (REPO / "data" / "eval" / "reddit_referents.jsonl").read_bytes().splitlines()
        )
    }
    gold = [
        record
        for record in map(
            orjson.loads, (REPO / "data" / "eval" / "reddit_gold.jsonl").read_bytes().splitlines()
        )
        if record["label"] == "valid" and record["pronoun"].lower() in TARGET_PRONOUNS
    ][:gold_items]
    labels = {}
    for number, (item, record) in enumerate(zip(rows, gold, strict=False)):
        (a1, e1), (a2, e2) = record["antecedent1"], record["antecedent2"]
        sentence = record["sentence"]
        item.update(
            candidate_id=record["candidate_id"],
            sentence=sentence,
            perturbed_sentence=sentence,
            antecedent1=sentence[a1:e1],
            antecedent1_start=a1,
            antecedent1_end=e1,
            antecedent2=sentence[a2:e2],
            antecedent2_start=a2,
            antecedent2_end=e2,
            name1=sentence[a1:e1],
            name1_start=a1,
            name1_end=e1,
            name2=sentence[a2:e2],
            name2_start=a2,
            name2_end=e2,
            pronoun=sentence[record["pronoun_start"] : record["pronoun_end"]],
            pronoun_start=record["pronoun_start"],
            pronoun_end=record["pronoun_end"],
            perturbed_pronoun_start=record["pronoun_start"],
            perturbed_pronoun_end=record["pronoun_end"],
            pronoun_gender=TARGET_PRONOUNS[record["pronoun"].lower()],
        )
        judged = referents[record["candidate_id"]]
        labels[item["candidate_id"]] = (
            (judged == "antecedent2") != (number % 5 == 4) if judged != "unclear" else 1
        )
        if number == 1:
            item["antecedent1_end"] -= 1
    for number, item in enumerate(rows[gold_items:]):
        labels[item["candidate_id"]] = number % 2
    pq.write_table(pa.Table.from_pylist(rows, schema=ITEM_SCHEMA), item_file)
    choices = ("antecedent1", "antecedent2")
    votes = [vote(a, choices[int(label)], a, item) for item, label in labels.items() for a in range(4)]
    votes += screened(list(labels))
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), run / "votes.parquet")
    return run, {item: int(label) for item, label in labels.items()}, rows[1]["candidate_id"]


def subject_by_hand(doc: Any, released: dict[str, Any]) -> int | None:
    """The name whose marked span's head token (the one whose head lies outside it) is a nominal subject."""
    found = []
    for name in ("name1", "name2"):
        start, end = released[f"{name}_start"], released[f"{name}_end"]
        tokens = [t for t in doc if t.idx < end and t.idx + len(t) > start]
        heads = [t for t in tokens if not (start <= t.head.idx < end) or t.head == t]
        found.append(bool(heads) and heads[0].dep_.startswith("nsubj"))
    return found.index(True) if found.count(True) == 1 else None


@pytest.mark.integration
def test_every_figure_of_a_gold_release_is_counted_again_from_its_rows(tmp_path: Path) -> None:
    from knowref60k.extract.nlp import shared_pipeline

    run, labels, other_pair = gold_run(tmp_path / "run")
    release = build_release(run, run / "votes.parquet", "v1", tmp_path / "releases").path
    rows = released_rows(release)
    assert {r["id"]: r["label"] for r in rows} == labels
    facts = check_section(release, subject=True)
    card = (release / "README.md").read_text(encoding="utf-8")
    nlp = shared_pipeline(facts["parser"]["model"]).nlp
    subject = counted([subject_by_hand(nlp(r["sentence"]), r) for r in rows], rows)
    assert facts["baselines"]["subject"] == subject
    assert f"| syntactic subject | {accuracy_cell(subject)} |" in card
    assert f"Parser: {facts['parser']['model']} {facts['parser']['version']};" in card
    local = classifier_accuracy(rows, lambda r: (window(r, r["name1"]), window(r, r["name2"])))
    assert facts["baselines"]["local_context"] == local
    assert facts["baselines"]["probe"] == classifier_accuracy(rows, fill_pronoun)
    # The labels against the judged referents, counted from the file: 47 gold items keep their judged
    # pair (one took another span), every fifth label flipped.
    referents = {
        r["candidate_id"]: r["referent"]
        for r in map(
            orjson.loads, (REPO / "data" / "eval" / "reddit_referents.jsonl").read_bytes().splitlines()
        )
    }
    gold = [r for r in rows if r["id"] in referents]
    judged = [r for r in gold if r["id"] != other_pair]
    clear = [r for r in judged if referents[r["id"]] != "unclear"]
    agree = sum(("antecedent1", "antecedent2")[r["label"]] == referents[r["id"]] for r in clear)
    assert (len(gold), len(judged)) == (48, 47)
    assert facts["referents"] == {
        "items": len(rows),
        "judged": len(judged),
        "other_pair": 1,
        "clear": len(clear),
        "agree": agree,
        "agreement": proportion(agree, len(clear)),
        "unclear": len(judged) - len(clear),
    }
    assert 0 < agree < len(clear)  # every fifth label was flipped
    low, high = proportion(agree, len(clear))["interval_95"]
    assert (
        f"{len(judged):,} of the {len(rows):,} kept items, with their judged pair of names. Of them, "
        f"{len(clear):,} have a clear referent and the label agrees with it on {agree:,} "
        f"({agree / len(clear):.1%}, 95% interval {low:.1%} to {high:.1%}); "
        f"{len(judged) - len(clear):,} were judged unclear. 1 more are judged sentences" in card
    )


# ---- the shipped benchmark figures ----


@pytest.mark.integration
def test_the_shipped_benchmark_baselines_are_recomputed_from_the_benchmark_files(tmp_path: Path) -> None:
    """tools/eval/benchmark_baselines.py on ../shared writes the shipped file byte for byte (about 15 s:
    every item of the three sets, parsed once)."""
    benchmarks = shared_file("data/benchmarks")
    shipped = read_benchmark_baselines()
    model, version = shipped["parser"]["model"], shipped["parser"]["version"]
    if not is_installed(model):
        missing_prerequisite(
            f"spaCy pipeline {model} {version} (the shipped figures' parser) is not installed"
        )
    out = tmp_path / "benchmark_baselines.json"
    script = REPO / "tools" / "eval" / "benchmark_baselines.py"
    command = [
        sys.executable,
        str(script),
        "--benchmarks",
        str(benchmarks),
        "--model",
        model,
        "--out",
        str(out),
    ]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    recomputed = orjson.loads(out.read_bytes())
    if recomputed["parser"]["version"] != version:
        missing_prerequisite(
            f"spaCy pipeline {model} {recomputed['parser']['version']} installed, not {version}"
        )
    assert out.read_bytes() == BENCHMARK_BASELINES.read_bytes()
    for found in recomputed["sets"].values():
        assert all(found["baselines"][name] is not None for name in found["baselines"])


def test_the_researchers_page_shows_the_shipped_benchmark_figures() -> None:
    """docs/researchers.md's table is the shipped file's, cell for cell, and its reading of it holds:
    every interval contains 50% except the two classifiers' on DPR test."""
    shipped = read_benchmark_baselines()["sets"]
    page = (REPO / "docs" / "researchers.md").read_text(encoding="utf-8")
    titles = {
        "first_named": "first-named person",
        "nearest_named": "nearest-named person",
        "subject": "syntactic subject",
        "local_context": "local context only",
        "probe": "linear probe (AFLite)",
    }
    sets = ("wsc273", "dpr-test", "winogrande-dev")
    assert "| baseline | WSC-273 (273) | DPR test (564) | WinoGrande dev (1,267) |" in page
    assert [shipped[name]["items"] for name in sets] == [273, 564, 1267]
    for name, title in titles.items():
        cells = [accuracy_cell(shipped[benchmark]["baselines"][name]) for benchmark in sets]
        assert f"| {title} | " + " | ".join(cells) + " |" in page, title
    above_chance = {
        (benchmark, name)
        for benchmark in sets
        for name, found in shipped[benchmark]["baselines"].items()
        if not found["interval_95"][0] <= 0.5 <= found["interval_95"][1]
    }
    assert above_chance == {("dpr-test", "local_context"), ("dpr-test", "probe")}
    assert "Every interval contains 50% except those of the two classifiers on DPR test" in page
