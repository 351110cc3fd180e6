"""The dataset card (README.md with YAML metadata) and the figures of a release: the funnel and the
overlap curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knowref60k.core.figures import pyplot, save_figure
from knowref60k.release.agreement import AgreementReport, kappa_text
from knowref60k.release.config import ReleaseConfig
from knowref60k.release.schema import hf_features, release_fields
from knowref60k.release.splits import SPLITS


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


def _yaml(
    version: str,
    counts: Mapping[str, int],
    sizes: Mapping[str, int],
    simulated: bool,
    audited: bool,
    debiased_counts: Mapping[str, int] | None = None,
) -> str:
    present = [split for split in SPLITS if counts[split]]
    lines = ["---"]
    if simulated:
        lines.append("# WARNING: built from SIMULATED votes (a demo or test release), not from people.")
    lines += [
        f"pretty_name: KnowRef-60K-style pronoun problems from Reddit ({version})",
        "license: cc-by-4.0",
        "language:",
        "- en",
        "task_categories:",
        "- multiple-choice",
        "tags:",
        "- coreference",
        "- winograd",
        "configs:",
        "- config_name: default",
        "  data_files:",
    ]
    for split in present:
        lines += [f"  - split: {split}", f"    path: data/{split}-*.parquet"]
    if debiased_counts is not None:
        # As winogrande_debiased: only the items AFLite kept (`aflite_kept`), in the same splits.
        lines += ["- config_name: debiased", "  data_files:"]
        for split in (split for split in SPLITS if debiased_counts.get(split)):
            lines += [f"  - split: {split}", f"    path: data/debiased/{split}-*.parquet"]
    lines += ["dataset_info:", "  features:"]
    for name, feature in hf_features(audited, debiased_counts is not None).items():
        lines.append(f"  - name: {name}")
        if feature["_type"] == "ClassLabel":
            lines += ["    dtype:", "      class_label:", "        names:"]
            lines += [f"          '{i}': {label}" for i, label in enumerate(feature["names"])]
        elif feature["_type"] == "List":
            lines += ["    list: string"]
        else:
            lines.append(f"    dtype: {feature['dtype']}")
    lines += ["  splits:"]
    for split in present:
        lines += [
            f"  - name: {split}",
            f"    num_bytes: {sizes[split]}",
            f"    num_examples: {counts[split]}",
        ]
    lines.append("---")
    return "\n".join(lines) + "\n"


LICENCE_AND_LIMITATIONS = """## Licence

The labels, names and offsets of this release are CC BY 4.0. The sentences are excerpts of Reddit
comments: they remain their authors' and are subject to Reddit's User Agreement and Data API terms;
use them for research, and remove an item when its comment is deleted.

## Limitations

- Candidates are found by rules on a small spaCy model. On a hand-judged sample of Reddit (the
  knowref60k repository's `data/eval/`), about 3 in 4 extracted candidates are valid problems (75.7%
  precision; 68.4% on its held-back part) and about half of the valid sentences are found (52.3%).
  Annotators' "neither" answers remove most invalid items; the share is reported above.
- Names are replaced by US and world first names of the pronoun's gender; items whose other-gender
  pronouns would be left dangling are dropped. The original text is English Reddit, with its topics
  and biases.

## Citation

```bibtex
@misc{knowref60k_pipeline,
  title  = {knowref60k: KnowRef-60K-style pronoun problems mined from Reddit},
  note   = {Dataset release built with the knowref60k pipeline},
  year   = {2026}
}
@inproceedings{emami-etal-2020-analysis,
  title     = {An Analysis of Dataset Overlap on {W}inograd-Style Tasks},
  author    = {Emami, Ali and Suleman, Kaheer and Trischler, Adam and Cheung, Jackie Chi Kit},
  booktitle = {Proceedings of the 28th International Conference on Computational Linguistics},
  year      = {2020},
}
```
"""


def render_card(
    version: str,
    counts: Mapping[str, int],
    sizes: Mapping[str, int],
    funnel: Sequence[tuple[str, int]],
    report: AgreementReport,
    config: ReleaseConfig,
    simulated: bool,
    overlap: Mapping[str, Any] | None = None,
    grouping: Mapping[str, int] | None = None,
    aflite: Mapping[str, Any] | None = None,
) -> str:
    summary = report.summary()
    kept_counts = aflite["splits"] if aflite else None
    parts = [_yaml(version, counts, sizes, simulated, overlap is not None, kept_counts)]
    if simulated:
        parts.append(
            f"> **WARNING: SIMULATED VOTES.** {report.simulated_votes:,} votes of this release came from "
            "simulated annotators (`knowref60k annotate simulate`). It shows the pipeline working; "
            "it is not a dataset.\n"
        )
    parts.append(
        f"# KnowRef-60K-style pronoun problems from Reddit, release {version}\n\n"
        "Each item is a sentence from a Reddit comment naming two people, followed by a pronoun that refers "
        "to one of them. Both people were renamed with random first names of the pronoun's gender, so the "
        "names give nothing away; five annotators chose the referent, and an item is kept when at least "
        f"{config.rule.keep_at_least} of {config.rule.votes_per_item} agree. Built with knowref60k, "
        "following KnowRef-60K (Emami et al., COLING 2020).\n"
    )
    # A table is one part: parts are joined with a blank line, which would end a table after its header.
    parts.append(
        "## Splits\n\n| split | items |\n|---|---:|\n"
        + "".join(f"| {split} | {counts[split]:,} |\n" for split in SPLITS)
    )
    grouping = grouping or {}
    parts.append(
        "Splits are decided by hashing each item's Reddit thread (`link_id`), so that no thread straddles "
        "two splits; an item without a thread id is placed by its own id. In this release "
        f"{grouping.get('thread', 0):,} items were placed by thread and {grouping.get('item', 0):,} by their "
        "own id. An item keeps its split in later releases.\n"
    )
    fields = release_fields(overlap is not None, aflite is not None)
    parts.append(
        "## Fields\n\n| field | type | description |\n|---|---|---|\n"
        + "".join(f"| `{f.name}` | {f.type} | {text} |\n" for f, text in fields)
    )
    parts.append(
        "## Construction funnel\n\n![funnel](funnel.png)\n\n| stage | count |\n|---|---:|\n"
        + "".join(f"| {name} | {count:,} |\n" for name, count in funnel)
    )
    items = summary["items"]
    parts.append(
        "\n## Agreement\n\n"
        f"- Items decided: {', '.join(f'{k} {v:,}' for k, v in items.items())}\n"
        f"- Fleiss' kappa over complete items: {kappa_text(summary['fleiss_kappa'])}\n"
        f'- Share of "neither" votes (extraction errors seen by annotators): {summary["neither_share"]:.1%}\n'
        f"- Label balance of kept items: {summary['label_balance']}\n"
        f"- Annotators: {len(summary['annotators'])}; flagged below {config.rule.flag_annotators_below:.0%} "
        f"agreement with the majority: {len(summary['flagged_annotators'])}\n"
    )
    if overlap:
        parts.append(_overlap_section(overlap))
    if aflite:
        parts.append(_aflite_section(aflite))
    parts.append(
        "\n## Loading\n\nFrom inside this folder (the paths are relative to it):\n\n```python\n"
        'import knowref60k\ntable = knowref60k.load_release(".", "train")      # pyarrow.Table\n\n'
        "import glob\nimport pandas as pd\n"
        'df = pd.concat(pd.read_parquet(p) for p in sorted(glob.glob("data/train-*.parquet")))\n\n'
        "import duckdb\nduckdb.sql(\"SELECT label, count(*) FROM 'data/*.parquet' GROUP BY label\")\n\n"
        "from datasets import load_dataset\n"
        'ds = load_dataset(".")                       # label is a ClassLabel\n'
        'ds = load_dataset("parquet", data_files={"train": "data/train-*.parquet"})  # so is this one\n'
        "```\n\n"
        "`jsonl/{train,validation,test}.jsonl` hold the same items with KnowRef-60K's field names "
        "(`sentence_with_pronoun`, `candidate0`, `candidate1`, `correct_candidate`, `annotation_strength`).\n"
        "`manifest.json` lists every file with its sha256, the sources with theirs, the config and seeds.\n"
    )
    parts.append(
        "\n## Privacy\n\nNo Reddit username appears in this release. Annotator ids are opaque hashes. "
        "Items point to their comment by id only.\n"
    )
    parts.append(LICENCE_AND_LIMITATIONS)
    return "\n".join(part.rstrip("\n") + "\n" for part in parts)


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
