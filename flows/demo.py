"""The whole loop on real dumps, with simulated annotators: dump -> candidates -> items -> screening of
the original sentences -> resolution of the renamed ones -> votes -> release.

    knowref60k demo DUMP ... [--out output/demo] [--screener-accuracy 0.9] [--resolver-accuracy 0.9]

(`make demo` gives the two 2015-2019 samples of ../shared: at the cost-chosen threshold one sample alone
gives too few items to measure a release by; the gold set has judged every candidate of both.)

Simulated screeners answer from the hand-judged gold set (`data/eval/`), right with the given accuracy;
simulated resolvers answer from the judged referent of each item (`reddit_referents.jsonl`), each account
right with an accuracy of its own (their mean is the given one), split between the names where the
judges found the referent unclear. Both work at the same time, one thread per account, and
take their tasks from Label Studio's labelling stream; every vote goes through the vote receiver, as in
production (each task admits only the votes its rule can still use; decided tasks leave the queue), so the
votes it reports are what people working side by side would cost. The k-th vote on an item is
drawn from (--seed, item, k), whichever account Label Studio serves it to: the same seed gives the same
votes but for the order Label Studio serves the accounts in. The release it cuts says in its first lines
that its votes are simulated; the demo prints how many of its items are valid problems by the gold set,
how many of their labels agree with the judged referent, and what they cost in votes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
from prefect import flow, task

from knowref60k.core.console import make_console, print_error, render_funnel
from knowref60k.core.errors import UserError
from knowref60k.core.io import file_sha256
from knowref60k.core.stats import PipelineStats
from knowref60k.labelling.controls import control_answers
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k.release.load import load_release
from knowref60k.release.splits import SPLITS
from knowref60k.settings.effective import RunConfig
from knowref60k_annotation.settings import demo_settings, load_settings, with_config
from knowref60k_flows.common import missing_inputs
from knowref60k_flows.labelling import collect_votes, promote, push, simulate, start_label_studio
from knowref60k_flows.pipeline import pipeline_flow
from knowref60k_flows.release import cut_release

SCREENERS, RESOLVERS = 3, 5


@task
def gold_answers(items: list[str]) -> dict[str, dict[str, str]]:
    """What a careful screener answers for each item the gold set judged, and who a careful resolver
    names for each item it judged valid."""
    from knowref60k.labelling.referents import load_referents
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.gold_verdicts import resolution_answers, screening_answers

    gold = {item.candidate_id: item for item in load_gold()}
    rows = [row for path in items for row in pq.read_table(path).to_pylist()]
    return {
        SCREENING: screening_answers(rows, gold),
        RESOLUTION: resolution_answers(rows, gold, load_referents()),
    }


@flow(name="demo")
def demo_flow(
    dumps: list[str],
    out_dir: str,
    screener_accuracy: float = 0.9,
    resolver_accuracy: float = 0.9,
    config_path: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    out = Path(out_dir)
    settings = with_config(
        demo_settings(load_settings(create=True)), Path(config_path) if config_path else None
    )
    run_settings = RunConfig.load(Path(config_path) if config_path else None)
    config = run_settings.labelling
    pipeline = pipeline_flow(dumps, str(out), settings=run_settings)
    items = [report["items_path"] for report in pipeline["prepare"]["files"]]
    start_label_studio(settings, config, sorted({str(Path(path).parent) for path in items}))
    answers = gold_answers(items)
    pushed = push(settings, items, config)
    controls = control_answers(config.controls)
    truth = {**answers[SCREENING], **controls}
    screened = simulate(settings, SCREENING, SCREENERS, screener_accuracy, config, truth, seed)
    votes_dir = str(out / "annotation")
    collected = collect_votes(settings, votes_dir, config)
    promoted = promote(settings, items, collected["votes_path"], config)
    truth = {**answers[RESOLUTION], **controls}
    resolved = simulate(settings, RESOLUTION, RESOLVERS, resolver_accuracy, config, truth, seed)
    collected = collect_votes(settings, votes_dir, config)
    version = f"demo-{file_sha256(Path(collected['votes_path']))[:8]}"
    releases = out / "releases"
    release = (
        {"path": str(releases / version), "reused": True}
        if (releases / version).exists()
        else cut_release(
            str(out),
            collected["votes_path"],
            version,
            str(releases),
            labelling=config,
            cost=run_settings.cost,
        )
    )
    return {
        "pipeline": pipeline,
        "pushed": pushed,
        "promoted": promoted,
        "votes_cast": {
            SCREENING: sum(screened["votes"].values()),
            RESOLUTION: sum(resolved["votes"].values()),
        },
        "resolver_accuracy": resolved["accuracy"],
        "votes": collected,
        "release": release,
        "answers": answers,
        "label_studio": settings.url,
        "state_dir": str(settings.state_dir),
    }


def release_quality(
    release: Path, answers: dict[str, dict[str, str]], votes: dict[str, Any]
) -> dict[str, Any]:
    """Validity of the release's items by the gold set, their labels' agreement with the judged referent
    (as the release's card states it), and every vote the loop cost per kept valid item."""
    from knowref60k.quality.gold_verdicts import validity

    ids = [row for split in SPLITS for row in load_release(release, split).column("id").to_pylist()]
    found = validity(ids, answers[SCREENING])
    spent = votes["votes"] + sum(votes["refused_votes"].values())
    manifest = orjson.loads((release / "manifest.json").read_bytes())
    return {
        **found,
        "labels": manifest["difficulty"]["referents"],
        "votes": spent,
        "votes_per_kept_valid_item": round(spent / found["valid"], 2) if found["valid"] else None,
    }


def main(
    dumps: list[str],
    out: str,
    screener_accuracy: float = 0.9,
    resolver_accuracy: float = 0.9,
    config: Path | None = None,
    seed: int = 0,
) -> int:
    """`knowref60k demo`: the demo flow on `dumps` into `out`, and its report. The exit code."""
    console = make_console()
    if missing_inputs(console, dumps, "dump(s)"):
        return 2
    console.print(f"Reading {len(dumps)} dump(s): {', '.join(Path(dump).name for dump in dumps)}")
    try:
        config_path = str(config) if config else None
        result = demo_flow(dumps, out, screener_accuracy, resolver_accuracy, config_path, seed)
    except UserError as error:
        print_error(console, error)
        return 2
    report(console, result)
    return 0


def report(console: Any, result: dict[str, Any]) -> None:
    funnel = PipelineStats.from_dict(result["pipeline"]["extract"]["stats"])
    funnel.merge(PipelineStats.from_dict(result["pipeline"]["prepare"]["stats"]))
    console.print(render_funnel(funnel, "Funnel"))
    votes = result["votes"]
    console.print(
        f"Label Studio: {result['pushed']['tasks']:,} screening tasks (controls included), "
        f"{result['promoted']['tasks']:,} resolution tasks; simulated votes cast {result['votes_cast']}; "
        f"collected {votes['votes_by_stage']}, refused {votes['refused_votes'] or 'none'}"
    )
    release = Path(result["release"]["path"])
    sizes = {split: load_release(release, split).num_rows for split in SPLITS}
    labelling = result["release"].get("labelling")
    if labelling:
        console.print(
            f"Screening: {labelling['screening']}; resolution: {result['release']['agreement']['items']}"
        )
    quality = release_quality(release, result["answers"], votes)
    console.print(
        f"Release items valid by the gold set: {quality['valid']:,} of {quality['items']:,} "
        f"(validity {quality['validity']}; invalid {quality['invalid'] or 'none'}; "
        f"unjudged {quality['unjudged']}); "
        f"{quality['votes']:,} votes in all, {quality['votes_per_kept_valid_item']} per kept valid item",
        style="bold",
    )
    console.print(labels_line(quality["labels"], result["resolver_accuracy"]), style="bold")
    console.print(
        f"Demo projects in their own Label Studio at {result['label_studio']} "
        f"(data in {result['state_dir']}; stop it with `make demo-stop`)"
    )
    console.print(f"Release (SIMULATED votes): {release} {sizes}", style="bold")
    expected = result["pipeline"]["labelling"]["expected"]
    if expected:
        console.print(
            f"Expected at these levels: {expected['votes_per_kept_valid']:.2f} votes per kept valid item, "
            f"validity {expected['validity']:.1%} (`knowref60k cost`)"
        )
    if sum(sizes.values()) == 0:
        console.print(
            "No item was kept: these dumps hold too few sentences naming two people before a connective. "
            "Run it on the 2015-2019 samples: make demo (no DUMPS)"
        )


def labels_line(labels: dict[str, Any], accuracy: dict[str, float | None]) -> str:
    """How many kept labels agree with the judged referent, as the release's card counts them."""
    agreement = labels["agreement"]
    return (
        f"Kept labels agreeing with the judged referent: {labels['agree']:,} of {labels['clear']:,} items "
        f"with a clear one ({agreement['share']}, 95% interval {agreement['interval_95']}); "
        f"{labels['unclear']:,} kept items the judges found unclear, {labels['other_pair']:,} judged with "
        f"another pair of names, {labels['items'] - labels['judged'] - labels['other_pair']:,} not judged; "
        f"simulated resolvers' accuracy {accuracy}"
    )
