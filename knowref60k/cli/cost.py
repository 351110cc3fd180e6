"""`knowref60k cost`: what labelling costs at each validity threshold, and the levels the run will use."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from knowref60k.cli.common import LevelsConfigOption, console, user_errors
from knowref60k.core.errors import UserError


def cost(
    config: LevelsConfigOption = None,
    step: Annotated[float, typer.Option(min=0.01, max=0.5, help="Step between the thresholds shown.")] = 0.05,
) -> None:
    """The cost curve (threshold -> expected precision, valid per million comments, votes, person- and
    CPU-seconds per kept valid item) and the levels chosen from the [cost] table."""
    from knowref60k.labelling.cost_model import read_calibration
    from knowref60k.labelling.levels import cost_curve
    from knowref60k.settings.effective import RunConfig, left_to_cost, pinned_by_file

    with user_errors():
        run = RunConfig.load(config)
        costs, labelling, levels = run.cost, run.labelling, run.levels
        calibration = read_calibration()
        if calibration is None or levels is None:
            raise UserError(
                "no calibration (data/scorer/calibration.json): `knowref60k measure-extraction` writes one "
                "to copy there"
            )
        # The curve varies the threshold around the screening levels the file sets (the others chosen).
        pinned = pinned_by_file(config, labelling, None)
        thresholds = tuple(round(i * step, 4) for i in range(round(1 / step) + 1))
        curve = cost_curve(calibration, labelling.rules, costs, pinned, thresholds)
    console.print(curve_table(curve, levels, costs))
    console.print(chosen_text(levels, costs, not left_to_cost(config, "prepare", "validity_threshold")))


def _level(level: float) -> str:
    return "none" if level <= 0 or level > 1 else f"{level:.2f}"


def curve_table(curve: list[Any], chosen: Any, costs: Any) -> Table:
    table = Table(
        title=(
            f"Labelling cost by validity threshold ({costs.screening_vote_seconds:g} s a screening vote, "
            f"{costs.resolution_vote_seconds:g} s a resolution vote; skip and careful levels the cheapest "
            f"reaching {costs.min_release_validity:.0%} validity)"
        )
    )
    columns = (
        "threshold",
        "skip",
        "careful",
        "precision",
        "valid / 1M",
        "validity",
        "votes",
        "person-s",
        "CPU-s",
    )
    for column in columns:
        table.add_column(column, justify="right")
    for point in [*curve, chosen]:
        style = "bold" if point is chosen else None
        table.add_row(
            f"{point.threshold:.2f}" + (" (chosen)" if point is chosen else ""),
            "never" if point.skip > 1 else f"{point.skip:.2f}",
            "never" if point.careful <= point.threshold else f"{point.careful:.2f}",
            f"{point.precision:.1%}",
            f"{point.valid_per_million:.1f}",
            f"{point.validity:.1%}",
            *_per_kept_valid(point),
            style=style,
        )
    table.caption = (
        "per kept valid item: votes, person-seconds, CPU-seconds; precision: of the candidates sent"
    )
    return table


def _per_kept_valid(point: Any) -> tuple[str, str, str]:
    """Votes, person-seconds and CPU-seconds per kept valid item; n/a where none is kept."""
    if not point.kept_valid_per_million:
        return ("n/a", "n/a", "n/a")
    return (
        f"{point.votes_per_kept_valid:.2f}",
        f"{point.person_seconds_per_kept_valid:.1f}",
        f"{point.cpu_seconds_per_kept_valid:.2f}",
    )


def chosen_text(levels: Any, costs: Any, threshold_set: bool) -> str:
    origin = "set in [prepare]" if threshold_set else "chosen by cost"
    text = (
        f"Levels: threshold {levels.threshold:.2f} ({origin}), skip screening from {_level(levels.skip)}, "
        f"careful screening below {_level(levels.careful)}: expected "
        f"{levels.votes_per_kept_valid:.2f} votes and "
        f"{levels.person_seconds_per_kept_valid:.0f} person-seconds per kept valid item, validity "
        f"{levels.validity:.1%}, {levels.valid_per_million:.1f} valid items sent per million comments (95% "
        f"lower bound {levels.valid_per_million_low:.1f}; target {costs.min_valid_per_million:g})"
    )
    if costs.person_hour_price or costs.cpu_hour_price:
        text += f"; {levels.price_per_kept_valid(costs):.3f} {costs.currency} per kept valid item"
    return text
