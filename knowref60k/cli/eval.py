"""`knowref60k eval`: extraction quality. Recall on the KnowRef (2019) sentences, precision and yield of
the rules on the hand-judged Reddit gold set, and the validity score's precision / yield curve with the
thresholds chosen on the gold set's tuning part measured on its held-back part, and an ablation."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table
from rich.text import Text

from knowref60k.cli.common import ExtractConfigOption, ModelOption, console, user_errors
from knowref60k.core.config import ANTECEDENT_RULES, PERSON_DETECTION_MODES, load_config
from knowref60k.core.model_file import recall_floor
from knowref60k.core.paths import CALIBRATION

# What the validity score is held to, on the held-back parts (docs/measurements.md, "The validity score").
PRECISION_AT_RULES_YIELD, YIELD_AT_90 = 0.88, 60.0
KNOWREF_RECALL = 0.90
# What the default sends to labelling is held to: its precision and yield on the held-back part.
SENT_PRECISION, SENT_PER_MILLION = 0.93, 30.0


def evaluate_recall(
    items: Annotated[
        Path,
        typer.Option(
            help="KnowRef (2019) items JSON, e.g. ../shared/data/knowref2019/knowref2019_reddit_items.json."
        ),
    ],
    gold: Annotated[
        Path | None,
        typer.Option(help="Judged Reddit sentences (default: the gold set installed with the package)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for eval.json and the curve.")] = Path("output/eval"),
    config: ExtractConfigOption = None,
    model: ModelOption = None,
    compare: Annotated[
        bool, typer.Option(help="Also compare person detection modes and antecedent rules.")
    ] = True,
) -> None:
    """Recall, the rules' precision and yield, and the validity score's curve, targets and ablation."""
    from knowref60k.extract.nlp import resolve_model_name, shared_pipeline
    from knowref60k.quality.evaluation import evaluate, evaluate_modes, load_reference
    from knowref60k.quality.gold import GOLD_FILE, gold_metadata, load_gold, score_gold
    from knowref60k.quality.score_eval import RULES

    with user_errors():
        settings = load_config(config, model=model)
        model_name = resolve_model_name(settings.model)
        reference = load_reference(items)
        gold = gold or GOLD_FILE
        gold_items = load_gold(gold)
        comments = gold_metadata(gold)["source_comments"]
        threshold = recall_floor()
        rules_settings = dataclasses.replace(settings, person_detection=RULES)
        analysing = "extraction on the KnowRef sentences and the gold set; the score's curve"
        # Every setting analyses the same sentences: spaCy's analyses are remembered across them.
        with console.status(analysing), shared_pipeline(model_name).remembering():
            results = evaluate_modes(
                reference, settings, model_name, [{"max_connectives": 1}, {"max_connectives": 2}]
            )
            rules = evaluate(reference, rules_settings, model_name)
            gold_result = score_gold(gold_items, rules_settings, model_name, comments)
            score = score_report(gold_items, rules_settings, model_name, comments, threshold)
            ablation = person_ablation(reference, settings, model_name) if compare else []
    modes = [*results, rules]
    print_tables(modes, len(reference), model_name, gold_result, score, ablation)
    payload = {"modes": modes, "reddit_gold": gold_result, "score": score, "person_detection": ablation}
    with user_errors():
        write_results(out, payload)


def print_tables(
    modes: list[dict[str, Any]],
    sentences: int,
    model_name: str,
    gold_result: dict[str, Any],
    score: dict[str, Any],
    ablation: list[dict[str, Any]],
) -> None:
    for table in (
        recall_table(modes, sentences, model_name),
        gold_table(gold_result, model_name),
        score_table(score),
        targets_table(modes[0], score),
        feature_table(score["ablation"]),
    ):
        console.print(table)
    if ablation:
        console.print(ablation_table(ablation))


def write_results(out: Path, payload: dict[str, Any]) -> None:
    """eval.json and the score's precision / yield curve, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    render_curve(payload["score"], out / "validity-curve.png")
    (out / "eval.json").write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    (out / CALIBRATION.name).write_bytes(orjson.dumps(payload["score"]["calibration"]) + b"\n")
    console.print(
        f"Details in {(out / 'eval.json').resolve()}, the curve in {(out / 'validity-curve.png').resolve()}"
    )


def score_report(
    items: Any, settings: Any, model_name: str, comments: int, threshold: float
) -> dict[str, Any]:
    """The score's curve and operating points against the rules of `settings`, and the ablation."""
    from knowref60k.quality.score_eval import evaluate_score
    from knowref60k.quality.scorer_data import examples
    from knowref60k.quality.training import (
        ablation,
        check_tuning,
        out_of_fold,
        out_of_fold_by_sentence,
        span_out_of_fold,
    )

    tune = [example for example in examples(items, model_name) if example.item.split == "tune"]
    span_scores = span_out_of_fold(model_name)
    check_tuning(tune, span_scores)
    trees = out_of_fold(tune)
    tune_scores = out_of_fold_by_sentence(tune, trees, span_scores)
    report = evaluate_score(items, settings, model_name, comments, threshold, tune_scores)
    return {**report, "ablation": ablation(tune, trees, span_scores)}


def person_ablation(reference: Any, settings: Any, model_name: str) -> list[dict[str, Any]]:
    from knowref60k.quality.evaluation import evaluate_modes

    modes = [
        {"person_detection": detection, "antecedent_rule": rule}
        for rule in ANTECEDENT_RULES
        for detection in PERSON_DETECTION_MODES
        if detection != "score"
    ]
    return evaluate_modes(reference, settings, model_name, modes)


def recall_table(results: list[dict[str, Any]], items: int, model_name: str) -> Table:
    table = Table(title=f"Recall on {items:,} KnowRef (2019) Reddit sentences ({model_name})")
    for column in ("mode", "subset", "items", "accepted", "same antecedents + pronoun"):
        table.add_column(column, justify="left" if column in ("mode", "subset") else "right")
    for result in results:
        mode = f"max_connectives={result['max_connectives']}, {result['person_detection']}"
        if result["person_detection"] == "score":
            mode += f" >= {result['validity_threshold']}"
        for subset, score in result["subsets"].items():
            table.add_row(
                mode,
                subset,
                f"{score['items']:,}",
                f"{score['accepted_share']:.1%} ({score['accepted']:,})",
                f"{score['same_share']:.1%} ({score['same_antecedents_and_pronoun']:,})",
            )
    return table


def gold_table(result: dict[str, Any], model_name: str) -> Table:
    comments = result["source_comments"]
    table = Table(title=f"The rules on the Reddit gold set ({comments:,} comments judged; {model_name})")
    for column in ("part", "items", "valid", "extracted", "correct", "precision", "recall", "errors"):
        table.add_column(column, justify="left" if column in ("part", "errors") else "right")
    for part, score in result["parts"].items():
        errors = ", ".join(f"{reason} {count}" for reason, count in score["errors"].items())
        table.add_row(
            part,
            *(f"{score[key]:,}" for key in ("items", "valid", "extracted", "correct")),
            f"{score['precision']:.1%}",
            f"{score['recall']:.1%}",
            errors,
        )
    table.caption = (
        f"yield: {result['valid_per_million_comments']:.1f} correct candidates per million comments"
    )
    return table


def score_table(score: dict[str, Any]) -> Table:
    table = Table(title="The validity score: thresholds chosen on the tuning part (out-of-fold scores)")
    for column in (
        "operating point",
        "part",
        "threshold",
        "kept",
        "correct",
        "precision",
        "valid / 1M",
        "errors",
    ):
        table.add_column(
            column, justify="left" if column in ("operating point", "part", "errors") else "right"
        )
    for name in score["chosen_on_tune"]:
        for part in ("tune", "heldout"):
            found = score[part][name]
            errors = ", ".join(f"{reason} {count}" for reason, count in found["errors"].items())
            precision = "n/a" if found["precision"] is None else f"{found['precision']:.1%}"
            table.add_row(
                name,
                part,
                f"{found['threshold']}",
                f"{found['kept']}",
                f"{found['correct']}",
                precision,
                f"{found['per_million']}",
                errors,
            )
    table.caption = f"the rules: {score['rules']['per_million']} correct per million comments"
    return table


def targets_table(scored: dict[str, Any], score: dict[str, Any]) -> Table:
    from knowref60k.quality.score_eval import CALIBRATION_TOLERANCE

    heldout = score["heldout"]
    recall = scored["subsets"]["single_connective"]["same_share"]
    rows = [
        (
            "precision at the rules' yield (held-back)",
            heldout["rules_yield"]["precision"] or 0.0,
            PRECISION_AT_RULES_YIELD,
            "{:.1%}",
        ),
        (
            "valid per million at 90% precision (held-back)",
            heldout["precision_90"]["per_million"] or 0.0,
            YIELD_AT_90,
            "{:.1f}",
        ),
        (
            f"KnowRef single-connective recall, default ({scored['person_detection']})",
            recall,
            KNOWREF_RECALL,
            "{:.1%}",
        ),
    ]
    if "default" in heldout:
        rows += [
            (
                "precision of what the default sends (held-back)",
                heldout["default"]["precision"] or 0.0,
                SENT_PRECISION,
                "{:.1%}",
            ),
            (
                "valid per million the default sends (held-back)",
                heldout["default"]["per_million"] or 0.0,
                SENT_PER_MILLION,
                "{:.1f}",
            ),
        ]
    table = Table(title="Extraction quality targets")
    for column in ("measure", "measured", "target", "met"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for measure, value, target, form in rows:
        met = Text("yes", style="green") if value >= target else Text("no", style="red")
        table.add_row(measure, form.format(value), f">= {form.format(target)}", met)
    check = score.get("calibration_check")
    if check:
        within = Text("yes", style="green") if check["within"] else Text("no", style="red")
        table.add_row(
            "calibration: expected against held-back precision at the default",
            f"{check['expected_precision']:.1%} vs {(check['heldout_precision'] or 0):.1%}",
            f"within {CALIBRATION_TOLERANCE:.0%}",
            within,
        )
    return table


def feature_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="Feature groups: average precision of out-of-fold scores on the tuning part")
    table.add_column("without")
    table.add_column("average precision", justify="right")
    for row in rows:
        table.add_row(row["without"], f"{row['average_precision']:.3f}")
    return table


def ablation_table(results: list[dict[str, Any]]) -> Table:
    table = Table(title="Person detection and antecedent rule (single-connective subset, max_connectives=1)")
    for column in ("antecedent_rule", "person_detection", "accepted", "same antecedents + pronoun"):
        table.add_column(column, justify="left" if column.endswith(("rule", "detection")) else "right")
    for result in results:
        score = result["subsets"]["single_connective"]
        table.add_row(
            result["antecedent_rule"],
            result["person_detection"],
            f"{score['accepted_share']:.1%}",
            f"{score['same_share']:.1%}",
        )
    return table


def render_curve(score: dict[str, Any], path: Path) -> None:
    """Precision against correct candidates per million comments, per part, with the rules' point."""
    from knowref60k.core.figures import pyplot, save_figure

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.5), dpi=100)
    for part, style in (("tune", "--"), ("heldout", "-")):
        points = [p for p in score["curves"][part] if p["precision"] is not None]
        label = f"validity score, {part} ({'out-of-fold' if part == 'tune' else 'held back'})"
        axis.plot([p["per_million"] for p in points], [p["precision"] for p in points], style, label=label)
    rules = score["rules"]
    axis.plot(
        [rules["per_million"]],
        [rules["parts"]["all"]["precision"]],
        "o",
        color="black",
        label="the rules (all parts)",
    )
    axis.set_xlabel("correct candidates per million comments")
    axis.set_ylabel("precision")
    axis.set_ylim(0, 1.02)
    axis.grid(alpha=0.3)
    axis.legend(loc="lower left", fontsize=8)
    axis.set_title("Validity score on the Reddit gold set")
    save_figure(figure, path)
