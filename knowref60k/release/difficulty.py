"""How right and how hard a release is, for its card and manifest: the label balance of the kept items,
simple baselines on them and, for comparison, on WSC-273, DPR test and WinoGrande dev (computed once by
tools/eval/benchmark_baselines.py into `data/eval/benchmark_baselines.json`), and the labels' agreement
with the hand-judged referents of the gold sentences among the kept items."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowref60k.core.config import DEFAULT_MODELS, is_installed, load_config
from knowref60k.core.errors import UserError
from knowref60k.core.io import file_sha256, read_report
from knowref60k.core.paths import DATA_DIR
from knowref60k.debias.baselines import (
    BASELINES,
    FEWEST_TO_CLASSIFY,
    FOLDS,
    SEED,
    WINDOW,
    baselines,
    benchmark_choice,
    label_balance,
    release_choice,
)
from knowref60k.overlap.benchmarks import FILES, TEST_SETS, read_set
from knowref60k.quality.referents import label_agreement, load_referents

if TYPE_CHECKING:
    from knowref60k.extract.nlp import Pipeline

log = logging.getLogger(__name__)

BENCHMARK_BASELINES = DATA_DIR / "eval" / "benchmark_baselines.json"
REBUILD = "tools/eval/benchmark_baselines.py rebuilds it (data/eval/README.md)"
INTERVAL = "Wilson score, 95%"
BENCHMARK_TITLES = {"wsc273": "WSC-273", "dpr-test": "DPR test", "winogrande-dev": "WinoGrande dev"}
# Each baseline's name in the card and what it means, in one line.
MEANINGS = {
    "first_named": (
        "first-named person",
        "always the person (option) mentioned first in the sentence.",
    ),
    "nearest_named": (
        "nearest-named person",
        "always the person with a mention closest to the pronoun (in characters, either side).",
    ),
    "subject": (
        "syntactic subject",
        "the person whose name is a grammatical subject (nsubj, nsubjpass) in the spaCy parse.",
    ),
    "local_context": (
        "local context only",
        f"WinoGrande's local-context baseline: a linear classifier that sees only the {WINDOW} words "
        "each side of the pronoun (the blank) filled with each option, cross-validated.",
    ),
    "probe": (
        "linear probe (AFLite)",
        "AFLite's linear probe on AFLite's features of the whole sentence filled with each option "
        "(hashed word 1-2-grams), cross-validated.",
    ),
}


def load_parser(model: str | None) -> Pipeline | None:
    """The spaCy pipeline that parses the kept items for the subject baseline, loaded once per process
    (`--model`, else `KNOWREF60K_SPACY_MODEL`, else the first installed default); None, with a warning,
    when no default pipeline is installed or the one found has no parser."""
    from knowref60k.extract.nlp import resolve_model_name, shared_pipeline

    name = model or load_config().model
    if name is None and not any(is_installed(default) for default in DEFAULT_MODELS):
        log.warning("no spaCy pipeline installed: the subject baseline is left out of the card")
        return None
    pipeline = shared_pipeline(resolve_model_name(name))
    if "parser" not in pipeline.nlp.pipe_names:
        log.warning("spaCy pipeline %s has no parser: no subject baseline", pipeline.model_name)
        return None
    return pipeline


def parser_facts(pipeline: Pipeline | None) -> dict[str, str] | None:
    return {"model": pipeline.model_name, "version": pipeline.version} if pipeline else None


def release_difficulty(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], items: Mapping[str, Mapping[str, Any]], model: str | None
) -> dict[str, Any]:
    """The section's figures as data: over every kept item (`rows` by split), with the items' original
    antecedent spans (`items` by id) to tell which gold sentences kept their judged pair of names."""
    every = [row for split_rows in rows.values() for row in split_rows]
    choices = [release_choice(row) for row in every]
    pipeline = load_parser(model) if choices else None
    antecedents = {
        row["id"]: (
            (items[row["id"]]["antecedent1_start"], items[row["id"]]["antecedent1_end"]),
            (items[row["id"]]["antecedent2_start"], items[row["id"]]["antecedent2_end"]),
        )
        for row in every
    }
    labels = [(row["id"], int(row["label"])) for row in every]
    return {
        "items": len(every),
        "label_balance": label_balance(choices),
        "chance": 0.5,
        "interval": INTERVAL,
        "seed": SEED,
        "folds": FOLDS,
        "parser": parser_facts(pipeline),
        "baselines": baselines(choices, pipeline),
        "referents": label_agreement(labels, load_referents(), antecedents),
        "benchmarks": read_benchmark_baselines(),
    }


def benchmark_baselines(root: Path, pipeline: Pipeline, seed: int = SEED) -> dict[str, Any]:
    """The baselines on every test set of `root` (../shared/data/benchmarks), with each file's sha256."""
    sets = {}
    for name in TEST_SETS:
        choices = [benchmark_choice(item) for item in read_set(root, name)]
        sets[name] = {
            "file": FILES[name],
            "sha256": file_sha256(root / FILES[name]),
            "items": len(choices),
            "label_balance": label_balance(choices),
            "baselines": baselines(choices, pipeline, seed),
        }
    return {
        "interval": INTERVAL,
        "seed": seed,
        "folds": FOLDS,
        "parser": parser_facts(pipeline),
        "sets": sets,
    }


def read_benchmark_baselines(path: Path = BENCHMARK_BASELINES) -> dict[str, Any]:
    """The shipped benchmark figures; a UserError naming the file when it is missing or not one."""
    if not path.is_file():
        raise UserError(f"{path}: not found: the benchmark baselines ship with knowref60k; {REBUILD}")
    found = read_report(path, "benchmark baselines file", ("parser", "sets"))
    if sorted(found["sets"]) != sorted(TEST_SETS):
        raise UserError(f"{path}: not a benchmark baselines file: sets {sorted(found['sets'])}; {REBUILD}")
    return found


def _accuracy(found: Mapping[str, Any] | None) -> str:
    if not found or found["share"] is None:
        return "n/a"
    low, high = found["interval_95"]
    undecided = f"; {found['undecided']:,} undecided" if found.get("undecided") else ""
    return f"{found['share']:.1%} [{low:.1%}, {high:.1%}]{undecided}"


def _parser_text(parser: Mapping[str, str] | None, items: int) -> str:
    if parser:
        return f"{parser['model']} {parser['version']}"
    return "none installed: no subject baseline" if items else "none loaded (no item to parse)"


def difficulty_section(facts: Mapping[str, Any]) -> str:
    """The card's section "How right and how hard"."""
    lines = ["\n## How right and how hard\n", _balance_text(facts), "", *_baseline_table(facts), ""]
    lines += [f"- **{title}**: {meaning}" for title, meaning in MEANINGS.values()]
    benchmarks = facts["benchmarks"]
    parsers = _parser_text(facts["parser"], facts["items"]), _parser_text(benchmarks["parser"], 1)
    lines += [
        "",
        f"The baselines score every kept item ({facts['items']:,}) against the release's own labels. An "
        "item a rule cannot decide (both or neither a subject, a name not found) gets a coin flip seeded by "
        "its id, and the undecided are counted. The two classifiers are cross-validated over "
        f"{facts['folds']} folds (whole threads here, WinoGrande's twins in the benchmarks; seed "
        f"{facts['seed']}); they need at least {FEWEST_TO_CLASSIFY} items. Parser: {parsers[0]}; for the "
        f"benchmarks {parsers[1]}. The benchmark figures are computed once from the benchmarks' files "
        "(`data/eval/benchmark_baselines.json` of knowref60k), not per release.",
        "",
        _referents_text(facts["referents"]),
    ]
    return "\n".join(lines) + "\n"


def _balance_text(facts: Mapping[str, Any]) -> str:
    balance, total = facts["label_balance"], facts["items"]
    if not total:
        return "No item was kept: there is nothing to measure."
    return (
        f"**Label balance.** Of the {total:,} kept items, {balance['option1']:,} "
        f"({balance['option1'] / total:.1%}) are labelled name1 (antecedent1, the first of the two "
        f"people) and {balance['option2']:,} ({balance['option2'] / total:.1%}) name2. **Chance** is "
        f"{facts['chance']:.0%}: a coin flip's expected accuracy on two options; always answering the "
        f"commoner label scores {balance['majority_share']:.1%}. Accuracies are shares of items with "
        f"their 95% interval in brackets ({facts['interval']})."
    )


def _baseline_table(facts: Mapping[str, Any]) -> list[str]:
    sets = facts["benchmarks"]["sets"]
    titles = [BENCHMARK_TITLES[name] for name in TEST_SETS]
    counts = [f"{sets[name]['items']:,}" for name in TEST_SETS]
    lines = [
        f"| baseline | this release ({facts['items']:,} items) | "
        + " | ".join(f"{title} ({count})" for title, count in zip(titles, counts, strict=True))
        + " |",
        "|---|---:|" + "---:|" * len(TEST_SETS),
    ]
    for name in BASELINES:
        cells = [_accuracy(facts["baselines"][name])]
        cells += [_accuracy(sets[benchmark]["baselines"][name]) for benchmark in TEST_SETS]
        lines.append(f"| {MEANINGS[name][0]} | " + " | ".join(cells) + " |")
    return lines


def _referents_text(found: Mapping[str, Any]) -> str:
    text = (
        "**Labels against the judged referents.** The truth is known beyond the resolvers only for kept "
        "items that are hand-judged gold sentences of knowref60k (`data/eval/reddit_referents.jsonl`: who "
        "the pronoun refers to in the original sentence, by its resolution criteria): "
        f"{found['judged']:,} of the {found['items']:,} kept items, with their judged pair of names. Of "
        f"them, {found['clear']:,} have a clear referent"
    )
    agreement = found["agreement"]
    if agreement["share"] is not None:
        low, high = agreement["interval_95"]
        text += (
            f" and the label agrees with it on {found['agree']:,} ({agreement['share']:.1%}, 95% interval "
            f"{low:.1%} to {high:.1%})"
        )
    text += f"; {found['unclear']:,} were judged unclear."
    if found["other_pair"]:
        text += (
            f" {found['other_pair']:,} more are judged sentences whose candidate paired other words than the "
            "judged names, so the judged referent says nothing of their label: left out."
        )
    return text + " The baselines above cover every kept item; this comparison only the judged ones."
