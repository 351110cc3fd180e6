"""The dataset card (README.md with YAML metadata) and the funnel figure of a release."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from knowref60k.splits import SPLITS

if TYPE_CHECKING:
    from knowref60k.agreement import AgreementReport
    from knowref60k.release import ReleaseConfig


def render_funnel_png(funnel: Sequence[tuple[str, int]], path: Path) -> None:
    """Counts per stage on a log scale, like Figure 2 of the KnowRef-60K paper; byte-stable output."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    plt.close(figure)


def _yaml(version: str, counts: Mapping[str, int], sizes: Mapping[str, int], simulated: bool) -> str:
    present = [split for split in SPLITS if counts[split]]
    from knowref60k.release import hf_features

    lines = ["---"]
    if simulated:
        lines.append("# WARNING: built from SIMULATED votes (a demo or test release), not from people.")
    lines += [
        f"pretty_name: KnowRef-60K-style pronoun problems from Reddit ({version})",
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
    lines += ["dataset_info:", "  features:"]
    for name, feature in hf_features().items():
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


def render_card(
    version: str,
    counts: Mapping[str, int],
    sizes: Mapping[str, int],
    funnel: Sequence[tuple[str, int]],
    report: AgreementReport,
    config: ReleaseConfig,
    simulated: bool,
) -> str:
    from knowref60k.release import FIELDS

    summary = report.summary()
    parts = [_yaml(version, counts, sizes, simulated)]
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
    parts.append("## Splits\n\n| split | items |\n|---|---:|\n")
    parts.append("".join(f"| {split} | {counts[split]:,} |\n" for split in SPLITS))
    parts.append(
        "\nSplits are decided by hashing the Reddit thread (`link_id`): no thread straddles two splits, "
        "and an "
        "item keeps its split in later releases.\n"
    )
    parts.append("## Fields\n\n| field | type | description |\n|---|---|---|\n")
    parts.append("".join(f"| `{f.name}` | {f.type} | {text} |\n" for f, text in FIELDS))
    parts.append("\n## Construction funnel\n\n![funnel](funnel.png)\n\n| stage | count |\n|---|---:|\n")
    parts.append("".join(f"| {name} | {count:,} |\n" for name, count in funnel))
    items = summary["items"]
    parts.append(
        "\n## Agreement\n\n"
        f"- Items decided: {', '.join(f'{k} {v:,}' for k, v in items.items())}\n"
        f"- Fleiss' kappa over complete items: {summary['fleiss_kappa']}\n"
        f'- Share of "neither" votes (extraction errors seen by annotators): {summary["neither_share"]:.1%}\n'
        f"- Label balance of kept items: {summary['label_balance']}\n"
        f"- Annotators: {len(summary['annotators'])}; flagged below {config.rule.flag_annotators_below:.0%} "
        f"agreement with the majority: {len(summary['flagged_annotators'])}\n"
    )
    parts.append(
        "\n## Loading\n\n```python\n"
        'import knowref60k\ntable = knowref60k.load_release("PATH", "train")      # pyarrow.Table\n\n'
        'import pandas as pd\ndf = pd.read_parquet("PATH/data/train-00000-of-00001.parquet")\n\n'
        "import duckdb\nduckdb.sql(\"SELECT label, count(*) FROM 'PATH/data/*.parquet' GROUP BY label\")\n\n"
        "from datasets import load_dataset\n"
        'ds = load_dataset("PATH")                    # label is a ClassLabel\n'
        "```\n\n"
        "`jsonl/{train,validation,test}.jsonl` hold the same items with KnowRef-60K's field names "
        "(`sentence_with_pronoun`, `candidate0`, `candidate1`, `correct_candidate`, `annotation_strength`).\n"
        "`manifest.json` lists every file with its sha256, the sources with theirs, the config and seeds.\n"
    )
    parts.append(
        "\n## Privacy\n\nNo Reddit username appears in this release. Annotator ids are opaque hashes. "
        "Items point to their comment by id only.\n"
    )
    return "\n".join(part.rstrip("\n") + "\n" for part in parts)
