"""Prefect flow: extraction, then de-duplication and perturbation, of one or more dumps.

    knowref60k run --out output/run ../shared/data/reddit/RC_2005-12.zst ...

Layout under --out: candidates/ (extraction), items/ (annotation-ready items), dedup-index.sqlite
(the de-duplication index, shared by every run that uses this folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from rich.console import Console

from knowref60k.core.console import make_console, print_error, render_funnel
from knowref60k.core.errors import UserError
from knowref60k.core.io import write_json_atomic
from knowref60k.core.stats import PipelineStats
from knowref60k.ingest.readers import check_input, detect_format
from knowref60k.labelling.config import LabellingConfig
from knowref60k.prepare.preparer import set_aside_path
from knowref60k.prepare.stages.threshold import HELD_BACK_SUFFIX, SEND_HELD_BACK, held_back
from knowref60k.settings.effective import RunConfig
from knowref60k_annotation.labelstudio_app.labelstudio_contract import LOGIN_PATH
from knowref60k_annotation.settings import load_settings, with_config
from knowref60k_flows.common import missing_inputs
from knowref60k_flows.extract import extract_flow
from knowref60k_flows.labelling import ensure_annotators, push, start_label_studio
from knowref60k_flows.prepare import prepare_flow


@flow(name="candidates-to-items")
def pipeline_flow(
    inputs: list[str], out_dir: str, settings: RunConfig, workers: int = 2, input_format: str = "auto"
) -> dict[str, Any]:
    """`settings`: the config file as the caller's command read it once (`RunConfig.load`), every level
    resolved; each phase gets its concrete part."""
    out = Path(out_dir)
    extracted = extract_flow(inputs, str(out / "candidates"), settings.extract, workers, input_format)
    candidates = [report["candidates_path"] for report in extracted["files"]]
    prepared = prepare_flow(candidates, str(out / "items"), str(out / "dedup-index.sqlite"), settings.prepare)
    plan = labelling_plan(settings, prepared)
    write_json_atomic(out / "labelling-plan.json", plan)
    return {"extract": extracted, "prepare": prepared, "labelling": plan}


def labelling_plan(settings: RunConfig, prepared: dict[str, Any]) -> dict[str, Any]:
    """The levels items were prepared and will be labelled at, what that is expected to cost, and the
    candidates the threshold held back (kept, so they can be sent later)."""
    return {
        "validity_threshold": settings.prepare.validity_threshold,
        "skip_screening_above": settings.labelling.skip_level,
        "careful_screening_below": settings.labelling.careful_level,
        "expected": settings.levels.to_dict() if settings.levels else None,
        "cost": settings.cost.to_dict(),
        "held_below_threshold": held_back(PipelineStats.from_dict(prepared["stats"])),
        "held_files": [
            str(set_aside_path(Path(f["source"]), Path(f["items_path"]).parent)) for f in prepared["files"]
        ],
    }


def print_outputs(console: Console, result: dict[str, Any]) -> None:
    """Where each input's candidates and items went, and the funnel."""
    for extracted, prepared in zip(result["extract"]["files"], result["prepare"]["files"], strict=True):
        state = "skipped: already done" if extracted["skipped"] else "extracted"
        console.print(
            f"{Path(extracted['source']).name}: {extracted['candidates']:,} candidates ({state}), "
            f"{prepared['items']:,} items"
        )
        console.print(
            f"  candidates: {extracted['candidates_path']}  (quarantine: {extracted['quarantine_path']})"
        )
        console.print(f"  items:      {prepared['items_path']}")
    funnel = PipelineStats.from_dict(result["extract"]["stats"])
    funnel.merge(PipelineStats.from_dict(result["prepare"]["stats"]))
    console.print(render_funnel(funnel, "Funnel"))
    console.print(f"Funnel files: {result['extract']['funnel_path']}, {result['prepare']['summary_path']}")
    console.print(f"De-duplication index: {result['prepare']['index']}")
    console.print(plan_text(result["labelling"]))
    if not any(f["items"] for f in result["prepare"]["files"]):
        console.print(
            "No items: no sentence of these inputs named two people before one connective with a "
            "pronoun after it (see the funnel for where they were dropped). Early or small dumps often "
            "hold none; try a larger one, e.g. INPUTS=../shared/data/reddit/RC_sample_1M.zst",
            style="yellow",
        )


def plan_text(plan: dict[str, Any]) -> str:
    expected = plan["expected"]
    careful = plan["careful_screening_below"]
    levels = (
        f"Labelling levels: validity threshold {plan['validity_threshold']:g}, unscreened from "
        f"{plan['skip_screening_above']:g}, careful screening {f'below {careful:g}' if careful else 'none'}"
    )
    if expected:
        seconds = plan["cost"]["screening_vote_seconds"], plan["cost"]["resolution_vote_seconds"]
        levels += (
            f"; expected {expected['votes_per_kept_valid']:.2f} votes and "
            f"{expected['person_seconds_per_kept_valid']:.0f} person-seconds per kept valid item (at "
            f"{seconds[0]:g} s a screening vote and {seconds[1]:g} s a resolution vote), validity "
            f"{expected['validity']:.1%} (`knowref60k cost` shows the curve)"
        )
    return (
        f"{levels}.\n{plan['held_below_threshold']:,} candidates scored below the threshold and were held "
        f"back (kept in items/*{HELD_BACK_SUFFIX}; to label them too: `{SEND_HELD_BACK}`, then push the "
        "items)."
    )


def main(
    inputs: list[str],
    out: str,
    config: Path | None,
    workers: int = 2,
    input_format: str = "auto",
    accounts: tuple[int, int] | None = None,
) -> int:
    """`knowref60k run`: the pipeline flow on `inputs` into `out`; with `accounts` (screeners, resolvers),
    then the items pushed into a local Label Studio it starts. The exit code."""
    console = make_console()
    if missing_inputs(console, inputs):
        return 2
    try:
        # Every table and input checked (in one line when one is bad) before Prefect starts or a dump is
        # read: a task that fails logs its traceback through Prefect before the error reaches us.
        settings = RunConfig.load(config)
        if accounts:  # its login, before a minute of extraction
            load_settings(create=True)
        for path in inputs:
            check_input(Path(path))
            detect_format(Path(path), input_format)
        result = pipeline_flow(inputs, out, settings, workers, input_format)
    except UserError as error:
        print_error(console, error)
        return 2
    print_outputs(console, result)
    if accounts:
        try:
            items = [f["items_path"] for f in result["prepare"]["files"]]
            config_path = str(config) if config else None
            annotation_flow(items, *accounts, settings.labelling, config_path)
        except UserError as error:
            print_error(console, error)
            return 2
    return 0


@flow(name="push-to-label-studio")
def annotation_flow(
    items: list[str], screeners: int, resolvers: int, config: LabellingConfig, config_path: str | None = None
) -> None:
    """Start Label Studio if needed, push the items to screening, make sure screeners and resolvers
    (two groups that never share an account) can log in; print where. `config`: the labelling settings
    the caller's RunConfig resolved; `config_path` only for Label Studio's own table."""
    settings = with_config(load_settings(create=True), Path(config_path) if config_path else None)
    console = make_console()
    console.print(start_label_studio(settings, config, sorted({str(Path(p).parent) for p in items})))
    pushed = push(settings, items, config)
    console.print(
        f"Label Studio: {pushed['pushed']:,} tasks imported into {pushed['stage']}, "
        f"{pushed['already_there']:,} already there, {pushed['tasks']:,} in the project; "
        f"{pushed['unscreened']:,} tasks went straight to resolution (items the validity model is sure of, "
        "with their share of control items)"
    )
    for role, count in (("screener", screeners), ("resolver", resolvers)):
        accounts = ensure_annotators(settings, role, count)
        console.print(f"{role.capitalize()}s log in at {settings.url}{LOGIN_PATH} with:")
        for account in accounts:
            console.print(f"  {account['email']}  {account['password']}")
    console.print(
        "Screening comes first; the vote receiver settles each vote as it arrives (closes decided tasks, "
        "opens the slots a task still needs, sends screened-valid items to resolution); "
        "`knowref60k flow annotate sync` (or `make serve`) collects the votes and repairs what it missed."
    )
    console.print(
        f"Admin: {settings.username} (password in .env). Stop the server and its receiver with "
        "`make labelstudio-stop`."
    )
