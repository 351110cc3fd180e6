"""The whole loop on real dumps, with simulated annotators: dump -> candidates -> items -> Label
Studio -> five simulated votes per item -> votes -> release.

    python -m flows.demo [DUMP ...] [--out output/demo]

The release it cuts says in its first lines that its votes are simulated.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefect import flow

from annotation.settings import DEMO_STATE_DIR, demo_settings, load_settings
from flows.annotate import collect_votes
from flows.common import missing_inputs
from flows.labelling import push, simulate, start_label_studio
from flows.pipeline import pipeline_flow
from flows.release import cut_release
from knowref60k.core.console import make_console, print_error, render_funnel
from knowref60k.core.errors import UserError
from knowref60k.core.io import file_sha256
from knowref60k.core.stats import PipelineStats
from knowref60k.release.agreement import kappa_text
from knowref60k.release.load import load_release
from knowref60k.release.splits import SPLITS

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DUMPS = [
    str(REPO.parent / "shared" / "data" / "reddit" / name) for name in ("RC_2005-12.zst", "RC_2006-01.zst")
]


@flow(name="demo")
def demo_flow(dumps: list[str], out_dir: str, annotators: int = 5, accuracy: float = 0.9) -> dict[str, Any]:
    out = Path(out_dir)
    settings = demo_settings(load_settings(create=True))
    pipeline = pipeline_flow(dumps, str(out))
    start_label_studio(settings, str(DEMO_STATE_DIR))
    items = [report["items_path"] for report in pipeline["prepare"]["files"]]
    pushed = push(settings, items)
    simulated = simulate(settings, annotators, accuracy, 0)
    collected = collect_votes(str(out / "annotation"), settings)
    version = f"demo-{file_sha256(Path(collected['votes_path']))[:8]}"
    releases = out / "releases"
    release = (
        {"path": str(releases / version), "reused": True}
        if (releases / version).exists()
        else cut_release(str(out), collected["votes_path"], version, str(releases))
    )
    return {
        "pipeline": pipeline,
        "pushed": pushed,
        "simulated": simulated,
        "votes": collected,
        "release": release,
        "label_studio": settings.url,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The whole loop with simulated annotators.")
    parser.add_argument("dumps", nargs="*", default=DEFAULT_DUMPS)
    parser.add_argument("--out", default="output/demo")
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--accuracy", type=float, default=0.9)
    args = parser.parse_args(argv)
    console = make_console()
    if missing_inputs(console, args.dumps, "dump(s)"):
        return 2
    try:
        result = demo_flow(args.dumps, args.out, args.annotators, args.accuracy)
    except UserError as error:
        print_error(console, error)
        return 2
    funnel = PipelineStats.from_dict(result["pipeline"]["extract"]["stats"])
    funnel.merge(PipelineStats.from_dict(result["pipeline"]["prepare"]["stats"]))
    console.print(render_funnel(funnel, "Funnel"))
    votes = result["votes"]
    console.print(
        f"Label Studio: {result['pushed']['tasks']:,} tasks; {result['simulated']:,} simulated annotations "
        f"posted; {votes['votes']:,} votes collected ({votes['simulated_votes']:,} simulated)"
    )
    release = Path(result["release"]["path"])
    sizes = {split: load_release(release, split).num_rows for split in SPLITS}
    agreement = result["release"].get("agreement")
    if agreement:
        console.print(
            f"Agreement: items {agreement['items']}, Fleiss' kappa {kappa_text(agreement['fleiss_kappa'])}, "
            f"neither votes {agreement['neither_share']:.1%}, labels {agreement['label_balance']}"
        )
    console.print(
        f"Demo project in its own Label Studio at {result['label_studio']} (data in {DEMO_STATE_DIR}; "
        "stop it with `make demo-stop`)"
    )
    console.print(f"Release (SIMULATED votes): {release} {sizes}", style="bold")
    if sum(sizes.values()) == 0:
        console.print(
            "The original 2005/2006 dumps hold no sentence with two named people before a connective, so "
            "this release is empty. For a fuller demo: make demo DUMPS=../shared/data/reddit/RC_sample_1M.zst"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
