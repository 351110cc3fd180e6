"""`knowref60k release`: a versioned Parquet release from items and votes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from knowref60k.cli.common import (
    DEFAULT_BENCHMARKS,
    BenchmarksOption,
    ModelOption,
    config_option,
    console,
    user_errors,
)
from knowref60k.cli.overlap import overlap_audit
from knowref60k.cli.stats import print_agreement
from knowref60k.core.errors import UserError

VersionOption = Annotated[str, typer.Option("--version", help="Release version, a plain name like 2026.11.")]
RunOption = Annotated[Path, typer.Option(help="Pipeline folder with candidates/ and items/.")]
VotesOption = Annotated[Path, typer.Option(help="votes.parquet from `annotate collect`.")]
OutOption = Annotated[Path, typer.Option(help="Folder of releases.")]
RulesOption = Annotated[Path | None, config_option("labelling", "cost")]
KeepOption = Annotated[int | None, typer.Option(help="Resolution votes that must agree to keep an item (4).")]
VotesPerItemOption = Annotated[int | None, typer.Option(help="The most resolution votes an item gets (5).")]
FifthOption = Annotated[bool | None, typer.Option("--fifth-vote", help="Kept items waited for all votes.")]
UnscreenedOption = Annotated[
    bool, typer.Option("--without-screening", help="Votes from before screening existed: resolve all.")
]
SharesOption = Annotated[str, typer.Option(help="train,validation,test shares.")]
OverlapOption = Annotated[
    Path | None,
    typer.Option(help="Overlap index (`overlap index`): adds overlap_bm25 etc. and a card section."),
]
DebiasOption = Annotated[bool, typer.Option("--debias", help="Add AFLite's columns and a `debiased` config.")]
FeaturesOption = Annotated[
    Literal["ngrams", "encoder"], typer.Option(help="AFLite's features with --debias.")
]


def release(
    version: VersionOption,
    run: RunOption = Path("output/run"),
    votes: VotesOption = Path("output/annotation/votes.parquet"),
    out: OutOption = Path("data/releases"),
    config_file: RulesOption = None,
    keep_at_least: KeepOption = None,
    votes_per_item: VotesPerItemOption = None,
    fifth_vote: FifthOption = None,
    without_screening: UnscreenedOption = False,
    split_proportions: SharesOption = "0.8,0.1,0.1",
    overlap_index: OverlapOption = None,
    benchmarks: BenchmarksOption = DEFAULT_BENCHMARKS,
    model: ModelOption = None,
    debias: DebiasOption = False,
    debias_features: FeaturesOption = "ngrams",
) -> None:
    """Agreement, splits and a documented Parquet release in OUT/VERSION (never overwritten)."""
    from knowref60k.core.io import output_folder
    from knowref60k.labelling.cost_model import load_cost_config
    from knowref60k.release.build import build_release, check_version
    from knowref60k.release.config import ReleaseConfig
    from knowref60k.settings.effective import labelling_settings

    with user_errors():
        check_version(version)  # before the overlap index and the votes are read
        labelling = labelling_settings(
            config_file,
            keep_at_least=keep_at_least,
            votes_per_item=votes_per_item,
            fifth_vote=fifth_vote,
            screening=False if without_screening else None,
        )
        config = ReleaseConfig(
            labelling,
            proportions=split_shares(split_proportions),
            debias=debias_features if debias else None,
            cost=load_cost_config(config_file),
            model=model,
        )
        output_folder(out)  # created only once every option is known to be good
        audit = overlap_audit(overlap_index, benchmarks, model) if overlap_index else None
        made = build_release(run, votes, version, out, config, audit)
    _print_release(made, debias_features if debias else None)


def split_shares(text: str) -> dict[str, float]:
    from knowref60k.release.splits import SPLITS

    try:
        return dict(zip(SPLITS, (float(x) for x in text.split(",")), strict=True))
    except ValueError:
        raise UserError(
            f"--split-proportions takes three numbers ({','.join(SPLITS)}), not {text!r}"
        ) from None


def _print_release(made: Any, debias_features: str | None) -> None:
    from knowref60k.release.load import read_manifest

    if made.simulated:
        console.print("WARNING: this release contains SIMULATED votes", style="bold yellow")
    if made.rejected_votes:
        console.print(f"votes left out (also in the manifest): {made.rejected_votes}", style="yellow")
    console.print(
        f"Release {made.version}: {', '.join(f'{k} {v:,}' for k, v in made.splits.items())} -> {made.path}"
    )
    print_agreement(made.report.summary())
    if debias_features:
        aflite = read_manifest(made.path)["aflite"]
        console.print(
            f"AFLite ({debias_features}): {aflite['kept']:,} of {aflite['instances']:,} items kept "
            "in the `debiased` config"
        )
