"""The dataset card (README.md with YAML metadata) and the figures of a release: the funnel and the
overlap curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

from knowref60k.core.figures import pyplot, save_figure
from knowref60k.release.agreement import alpha_text, kappa_text
from knowref60k.release.config import ReleaseConfig
from knowref60k.release.cost import cost_section
from knowref60k.release.difficulty import difficulty_section
from knowref60k.release.labelled import Labelled
from knowref60k.release.schema import hf_features, release_fields
from knowref60k.release.splits import SPLITS

TEMPLATE = Path(__file__).with_name("card_template.md")


def render_funnel_png(funnel: Sequence[tuple[str, int]], path: Path) -> None:
    """Counts per stage on a log scale, like Figure 2 of the KnowRef-60K paper."""
    plt = pyplot()
    labels = [name for name, _ in funnel][::-1]
    counts = [max(count, 1) for _, count in funnel][::-1]
    figure, axis = plt.subplots(figsize=(9, 4.8), dpi=100)
    bars = axis.barh(labels, counts, color="#4c72b0")
    axis.set_xscale("log")
    axis.set_xlabel("count (log scale)")
    axis.set_title("Construction funnel")
    for bar, (_, count) in zip(bars, funnel[::-1], strict=True):
        axis.text(
            bar.get_width() * 1.1, bar.get_y() + bar.get_height() / 2, f"{count:,}", va="center", fontsize=9
        )
    axis.set_xlim(1, max(counts) * 20)
    save_figure(figure, path)


@dataclass
class CardFacts:
    """What was written into a release folder before its card: the card and the manifest report it."""

    files: list[str]
    counts: dict[str, int]
    funnel: list[tuple[str, int]]
    simulated_votes: int
    grouping: dict[str, int]
    # The person detection the extraction reports record ("score", a rule, or several joined by ", "):
    # the card says how the candidates were found from it, not from the default.
    person_detection: str
    overlap: dict[str, Any] | None = None
    aflite: dict[str, Any] | None = None
    # What labelling was expected to cost and cost (knowref60k.release.cost).
    cost: dict[str, Any] | None = None
    # Label balance, baselines and agreement with judged referents (knowref60k.release.difficulty).
    difficulty: dict[str, Any] | None = None


def card_metadata(version: str, facts: CardFacts, sizes: Mapping[str, int]) -> dict[str, Any]:
    """The card's YAML header as data: what the Hugging Face Hub reads (configs, features, splits)."""
    present = [split for split in SPLITS if facts.counts[split]]
    configs = [
        {
            "config_name": "default",
            "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in present],
        }
    ]
    if facts.aflite is not None:
        # As winogrande_debiased: only the items AFLite kept (`aflite_kept`), in the same splits.
        debiased = [s for s in SPLITS if facts.aflite["splits"].get(s)]
        configs.append(
            {
                "config_name": "debiased",
                "data_files": [{"split": s, "path": f"data/debiased/{s}-*.parquet"} for s in debiased],
            }
        )
    features = hf_features(facts.overlap is not None, facts.aflite is not None)
    return {
        "pretty_name": f"KnowRef-60K-style pronoun problems from Reddit ({version})",
        "license": "cc-by-4.0",
        "language": ["en"],
        "task_categories": ["multiple-choice"],
        "tags": ["coreference", "winograd"],
        "configs": configs,
        "dataset_info": {
            "features": [{"name": name, **_yaml_feature(feature)} for name, feature in features.items()],
            "splits": [{"name": s, "num_bytes": sizes[s], "num_examples": facts.counts[s]} for s in present],
        },
    }


def _yaml_feature(feature: Mapping[str, Any]) -> dict[str, Any]:
    if feature["_type"] == "ClassLabel":
        return {"dtype": {"class_label": {"names": {str(i): n for i, n in enumerate(feature["names"])}}}}
    if feature["_type"] == "List":
        return {"list": "string"}
    return {"dtype": feature["dtype"]}


def render_card(
    version: str, facts: CardFacts, sizes: Mapping[str, int], labelled: Labelled, config: ReleaseConfig
) -> str:
    """README.md of a release: the YAML header, then the body from `card_template.md`."""
    header: str = yaml.safe_dump(card_metadata(version, facts, sizes), sort_keys=False, allow_unicode=True)
    warning = "# WARNING: built from SIMULATED votes (a demo or test release), not from people.\n"
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )
    template = environment.from_string(TEMPLATE.read_text(encoding="utf-8"))
    body: str = template.render(
        version=version,
        facts=facts,
        splits=SPLITS,
        fields=release_fields(facts.overlap is not None, facts.aflite is not None),
        labelling=labelled,
        rule=labelled.config.resolution_rule,
        report=labelled.report,
        kappa=kappa_text(labelled.report.summary()["fleiss_kappa"]),
        alpha=alpha_text(labelled.report.summary()["krippendorff_alpha"]),
        summary=labelled.summary(),
        screening=labelled.screening_counts(),
        candidates_found=candidates_found(facts.person_detection),
        difficulty_section=difficulty_section(facts.difficulty) if facts.difficulty else "",
        overlap_section=_overlap_section(facts.overlap) if facts.overlap else "",
        aflite_section=_aflite_section(facts.aflite) if facts.aflite else "",
        cost_section=cost_section(facts.cost) if facts.cost else "",
    )
    return "---\n" + (warning if facts.simulated_votes else "") + header + "---\n" + body


def candidates_found(person_detection: str) -> str:
    """How the candidates of a release were found, for its Limitations: ranked by the learned validity
    score (`score`, the default), found by the rules (`both`, `names`, `ner`), or both when the release
    mixes extractions made with each."""
    modes = {mode.strip() for mode in person_detection.split(",") if mode.strip()}
    shown = f"person detection `{person_detection}`"
    score = (
        "every pair of names before the connective, ranked by a learned validity score over a small "
        "spaCy model's analysis and a fine-tuned sentence encoder"
    )
    if modes == {"score"}:
        return f"Candidates are {score} ({shown})"
    if modes and "score" not in modes and "?" not in modes:
        return f"Candidates are found by rules on a small spaCy model ({shown})"
    if "score" in modes and "?" not in modes:
        return f"Candidates are found partly by rules on a small spaCy model and partly as {score} ({shown})"
    return "Candidates are found on a small spaCy model (the extraction did not record its person detection)"


def _overlap_section(overlap: Mapping[str, Any]) -> str:
    against = overlap["against"]
    corpus = ", ".join(f"`{f['name']}` ({f['sentences_indexed']:,} sentences)" for f in against["corpus"])
    lines = [
        "\n## Overlap with pretraining text\n",
        "Models do better on test items that overlap with their pretraining data (KnowRef-60K, section 3), "
        "so every item carries `overlap_bm25`: the BM25 score of the closest sentence of an indexed corpus "
        "under the paper's query, "
        f"{against['query']}; {against['scoring']}. Corpus: {corpus or 'none'}; "
        f"{against['sentences_indexed']:,} sentences indexed.\n",
        "| items | count | score > 0 | > 25 | > 35 | sharing a 13-gram with a benchmark |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, group in overlap["groups"].items():
        flagged = ", ".join(f"{b}: {n}" for b, n in group["benchmark_overlap"].items()) or "none"
        lines.append(
            f"| {name} | {group['items']:,} | {group['share_above_0']:.1%} | {group['share_above_25']:.1%} "
            f"| {group['share_above_35']:.1%} | {flagged} |"
        )
    lines += [
        "",
        "![overlap](overlap.png)",
        "",
        "`benchmark_overlap` names the benchmark (WSC-273, DPR, WinoGrande) an item shares a 13-gram with "
        "(lower-cased, punctuation removed); such items should be left out when testing on that benchmark.",
    ]
    return "\n".join(lines) + "\n"


def _aflite_section(aflite: Mapping[str, Any]) -> str:
    parameters, evidence = aflite["parameters"], aflite["evidence"]
    lines = [
        "\n## Debiased subset (AFLite)\n",
        "The `debiased` config holds the items that AFLite (Sakaguchi et al., WinoGrande, AAAI 2020, "
        "Algorithm 1) kept: in each round "
        f"{parameters['n']} logistic regressions, each trained on {parameters['m']:,} random items, "
        "predicted the others; the items predicted right in at least "
        f"{parameters['tau']:.0%} of the times they were held out were removed, at most {parameters['k']:,} "
        "per round, until fewer qualified or too few were left. Features: "
        f"{aflite['features']['description']}. Seed {parameters['seed']}; "
        f"{len(aflite['rounds'])} round(s); {aflite['kept']:,} of {aflite['instances']:,} items kept ("
        + ", ".join(f"{split} {count:,}" for split, count in aflite["splits"].items())
        + "). Every item carries `aflite_score`, `aflite_removed_round` and `aflite_kept`.\n",
        "The evidence, as in WinoGrande: the KL divergence between the two labels' distributions along "
        "the first principal component of the features, and the held-out accuracy of a fresh linear probe "
        "(50% = nothing left to learn), against a random subset and a PMI-filtered subset of the same "
        "size.\n",
        "| subset | items | KL along PC1 | probe accuracy |",
        "|---|---:|---:|---:|",
    ]
    for name, found in evidence.items():
        lines.append(
            f"| {name} | {found['size']:,} | {found['kl_pc1']:.4f} | {found['probe_accuracy']:.1%} |"
        )
    lines += ["", "![aflite](aflite.png)"]
    return "\n".join(lines) + "\n"
