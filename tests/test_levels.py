"""The labelling levels chosen by cost: the vectorised search against a brute force over every level on a
small synthetic calibration, levels the config sets, the `[cost]` table's checks, and the shipped
calibration's choice."""

from __future__ import annotations

import itertools
import math
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from knowref60k.cli.app import app
from knowref60k.core.errors import UserError
from knowref60k.labelling.config import (
    LabellingConfig,
    chosen_levels,
    load_labelling_config,
)
from knowref60k.labelling.cost_model import (
    Calibration,
    CostConfig,
    calibration_from,
    load_cost_config,
    read_calibration,
)
from knowref60k.labelling.costs import Plan, plan, summed
from knowref60k.labelling.decisions import ResolutionRule, ScreeningRule
from knowref60k.labelling.levels import NEVER, Pinned, Rules, choose_levels, cost_curve
from knowref60k.settings.effective import RunConfig, file_levels

REPO = Path(__file__).resolve().parents[1]

# Scores only at the middle of each tenth, so that every level of the search is equivalent to a tenth;
# the share of valid candidates grows with the score: 1 of 11 at 0.05, 10 of 11 at 0.95.
WEIGHTS = {round(s / 100, 2): (i + 1, max(10 - i, 1)) for i, s in enumerate(range(5, 100, 10))}
COMMENTS = 1_000_000


def synthetic_calibration(share: float = 0.5) -> Calibration:
    scored = [
        (score, valid)
        for score, (valid_count, invalid_count) in WEIGHTS.items()
        for valid in [True] * valid_count + [False] * invalid_count
    ]
    return calibration_from(scored, COMMENTS, share)


RULES = Rules(ScreeningRule(1, 1), ScreeningRule(2, 1), ResolutionRule(5, 4))
FREE = Pinned()


@cache
def band_plan(valid: int, invalid: int, rule: ScreeningRule | None, accuracy: float) -> Plan:
    return plan(valid, invalid, rule, RULES.resolution, accuracy, accuracy)


def brute_force(
    calibration: Calibration, cost: CostConfig, pinned: Pinned = FREE, rules: Rules = RULES
) -> tuple[float, tuple[float, float, float]]:
    """The fewest person-seconds per kept valid item over every threshold, skip and careful level of the
    tenths that `pinned` leaves free, with `knowref60k.labelling.costs.plan` on each band (not the
    vectorised search); the yield target only where the threshold is free."""
    scores, correct = calibration.scores, calibration.correct
    levels = [round(step / 10, 1) for step in range(11)]

    def counts(low: float, high: float) -> tuple[int, int]:
        inside = [c for s, c in zip(scores, correct, strict=True) if low <= s < high]
        return sum(inside), len(inside) - sum(inside)

    def options(pin: float | None, choices: list[float]) -> list[float]:
        return choices if pin is None else [pin]

    best = (math.inf, (0.0, 0.0, 0.0))
    triples = itertools.product(
        options(pinned.threshold, levels[:-1]),
        options(pinned.skip, [*levels, NEVER]) if rules.screening else [NEVER],
        options(pinned.careful, levels) if rules.screening else [0.0],
    )
    for threshold, skip, careful in triples:
        skip = max(skip, threshold) if rules.screening else threshold
        careful = min(max(careful, threshold), skip)
        bands = (
            (skip, math.inf, None),
            (careful, skip, rules.screening),
            (threshold, careful, rules.careful),
        )
        total = summed(
            band_plan(*counts(low, high), rule, cost.annotator_accuracy) for low, high, rule in bands
        )
        sent_valid = counts(threshold, math.inf)[0]
        low = max(sent_valid - 1.645 * math.sqrt(sent_valid), 0.0) * calibration.per_million
        short = pinned.threshold is None and low < cost.min_valid_per_million
        if total.validity < cost.min_release_validity or short or not total.kept_valid:
            continue
        seconds = (
            total.screening_votes * cost.screening_vote_seconds
            + total.resolution_votes * cost.resolution_vote_seconds
        ) / total.kept_valid
        if seconds < best[0] - 1e-9:
            best = (seconds, (threshold, skip, careful))
    return best


@pytest.mark.parametrize(
    "cost",
    [
        CostConfig(min_valid_per_million=20),
        CostConfig(min_valid_per_million=60, min_release_validity=0.95),
        CostConfig(screening_vote_seconds=40, resolution_vote_seconds=5, min_valid_per_million=10),
        CostConfig(min_release_validity=0.99, min_valid_per_million=5, annotator_accuracy=0.95),
    ],
    ids=["default-rates", "more-yield", "dear-screening", "strict"],
)
def test_the_chosen_levels_are_the_cheapest_of_a_brute_force_over_every_level(cost: CostConfig) -> None:
    calibration = synthetic_calibration()
    seconds, _ = brute_force(calibration, cost)
    chosen = choose_levels(calibration, RULES, cost, Pinned())
    assert math.isfinite(seconds)
    assert chosen.person_seconds_per_kept_valid == pytest.approx(seconds, rel=1e-9)
    assert chosen.validity >= cost.min_release_validity - 1e-9
    assert chosen.valid_per_million_low >= cost.min_valid_per_million - 1e-9
    # Each expected figure is what the exact plan of its three bands gives.
    assert chosen.threshold <= chosen.skip and (chosen.careful == 0 or chosen.threshold < chosen.careful)


@pytest.mark.parametrize(
    "pinned",
    [Pinned(threshold=0.3), Pinned(skip=2.0), Pinned(careful=0.6), Pinned(threshold=0.2, skip=1.0)],
    ids=["threshold", "skip-never", "careful", "threshold-and-skip"],
)
def test_levels_around_a_pinned_one_are_the_cheapest_of_the_brute_force(pinned: Pinned) -> None:
    calibration, cost = synthetic_calibration(), CostConfig(min_valid_per_million=20)
    seconds, _ = brute_force(calibration, cost, pinned)
    chosen = choose_levels(calibration, RULES, cost, pinned)
    assert math.isfinite(seconds)
    assert chosen.person_seconds_per_kept_valid == pytest.approx(seconds, rel=1e-9)
    for name in ("threshold", "skip"):
        if getattr(pinned, name) is not None:
            assert getattr(chosen, name) == getattr(pinned, name)


def test_without_screening_only_the_threshold_is_chosen() -> None:
    rules = Rules(None, ScreeningRule(2, 1), ResolutionRule(5, 4))
    calibration, cost = synthetic_calibration(), CostConfig(min_release_validity=0.8, min_valid_per_million=5)
    seconds, _ = brute_force(calibration, cost, Pinned(), rules)
    chosen = choose_levels(calibration, rules, cost, Pinned())
    assert chosen.person_seconds_per_kept_valid == pytest.approx(seconds, rel=1e-9)
    assert chosen.screening_votes_per_kept_valid == 0 and chosen.validity >= 0.8


def test_pinned_levels_no_target_allows_are_the_most_valid_not_an_error() -> None:
    """A team that sets its threshold chose its yield: levels are still chosen, the most valid when none
    reach the validity target, and their figures say so."""
    calibration = synthetic_calibration()
    strict = CostConfig(min_release_validity=1.0, min_valid_per_million=10_000)
    chosen = choose_levels(calibration, RULES, strict, Pinned(threshold=0.0))
    assert chosen.threshold == 0.0 and chosen.validity < 1.0 and not chosen.meets_yield
    everything = choose_levels(calibration, RULES, strict, Pinned(0.0, 0.5, 0.2))
    assert (everything.threshold, everything.skip, everything.careful) == (0.0, 0.5, 0.2)


def test_targets_of_zero_choose_levels_that_keep_something() -> None:
    free = CostConfig(min_release_validity=0, min_valid_per_million=0)
    chosen = choose_levels(synthetic_calibration(), RULES, free, Pinned())
    assert chosen.kept_valid_per_million > 0 and math.isfinite(chosen.person_seconds_per_kept_valid)


def test_targets_no_levels_reach_are_one_error_naming_the_closest() -> None:
    with pytest.raises(
        UserError, match=r"no labelling levels reach .*lower one in \[cost\] or set \[prepare\]"
    ):
        choose_levels(synthetic_calibration(), RULES, CostConfig(min_valid_per_million=10_000), Pinned())


def test_a_level_the_config_sets_is_kept_and_the_others_chosen_around_it() -> None:
    calibration = synthetic_calibration()
    cost = CostConfig(min_valid_per_million=0)
    free = choose_levels(calibration, RULES, cost, Pinned())
    pinned = choose_levels(calibration, RULES, cost, Pinned(threshold=0.3))
    assert pinned.threshold == 0.3 and free.threshold != 0.3
    assert pinned.person_seconds_per_kept_valid >= free.person_seconds_per_kept_valid
    never = choose_levels(calibration, RULES, cost, Pinned(threshold=0.3, skip=5.0))
    assert never.skip == NEVER


def test_the_curve_has_one_point_per_threshold_each_the_cheapest_skip_and_careful_levels() -> None:
    calibration = synthetic_calibration()
    cost = CostConfig(min_valid_per_million=0)
    curve = cost_curve(calibration, RULES, cost, Pinned(), (0.0, 0.5, 0.9))
    assert [point.threshold for point in curve] == [0.0, 0.5, 0.9]
    for point in curve:
        again = choose_levels(calibration, RULES, cost, Pinned(threshold=point.threshold))
        assert point == again
    # A higher threshold sends a larger valid share and fewer valid items.
    assert [p.precision for p in curve] == sorted(p.precision for p in curve)
    assert [p.valid_per_million for p in curve] == sorted((p.valid_per_million for p in curve), reverse=True)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "knowref60k.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_threshold_the_config_sets_wins_over_the_cost_model(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "[prepare]\nvalidity_threshold = 0.5\n[labelling]\nskip_screening_above = 0.95\n"
    )
    assert RunConfig.load(path).prepare.validity_threshold == 0.5
    assert load_labelling_config(path).skip_level == RunConfig.load(path).labelling.skip_level == 0.95
    levels = file_levels(path)
    assert levels is not None and (levels.threshold, levels.skip) == (0.5, 0.95)
    # Left to the cost model, the threshold is the one the default costs choose.
    default = chosen_levels(LabellingConfig())
    assert default is not None
    assert RunConfig.load(None).prepare.validity_threshold == default.threshold != 0.5


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        (
            "screening_vote_seconds = -3",
            "screening_vote_seconds = -3: seconds, prices and yields cannot be negative",
        ),
        ("min_release_validity = 1.2", "min_release_validity must be in [0, 1], not 1.2"),
        ("annotator_accuracy = 0.3", "annotator_accuracy must be in (0.5, 1], not 0.3"),
        ('resolution_vote_seconds = "slow"', "resolution_vote_seconds must be a number, not 'slow'"),
        ("screening_vote_seconds = 0\nresolution_vote_seconds = 0", "cannot both be 0"),
        ("vote_seconds = 3", "unknown setting(s)"),
        ("screening_vote_seconds = 1e308", "screening_vote_seconds = 1e+308: above 1,000,000"),
        ("person_hour_price = 1e7", "person_hour_price = 1e+07: above 1,000,000"),
        ("cpu_hour_price = 100000000000000000000", "cpu_hour_price must be a number that fits in 64 bits"),
        (r'currency = "\u001b[31mEUR"', "currency must be a code or symbol of 1 to 8 printable characters"),
        ('currency = ""', "currency must be a code or symbol"),
    ],
)
def test_a_cost_no_run_can_use_is_one_line_naming_the_file(tmp_path: Path, table: str, problem: str) -> None:
    path = write_config(tmp_path, f"[cost]\n{table}\n")
    with pytest.raises(UserError) as raised:
        load_cost_config(path)
    assert str(path) in str(raised.value) and problem in str(raised.value)
    result = CliRunner().invoke(app, ["cost", "--config", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], result.output


def test_the_cost_command_prints_the_curve_and_the_chosen_levels(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[cost]\nperson_hour_price = 20\n")
    result = CliRunner().invoke(app, ["cost", "--config", str(path), "--step", "0.25"])
    assert result.exit_code == 0, result.output
    levels = chosen_levels(LabellingConfig(), cost=load_cost_config(path))
    assert levels is not None
    text = " ".join(result.output.split())
    assert f"threshold {levels.threshold:.2f} (chosen by cost)" in text
    assert f"{levels.votes_per_kept_valid:.2f} votes" in text and "USD per kept valid item" in text
    for threshold in ("0.00", "0.25", "0.50", "0.75", "1.00"):
        assert threshold in text


def test_the_shipped_calibration_chooses_levels_meeting_the_default_targets() -> None:
    calibration = read_calibration()
    assert calibration is not None and len(calibration.scores) > 100
    levels = chosen_levels(LabellingConfig())
    assert levels is not None
    cost = CostConfig()
    assert levels.validity >= cost.min_release_validity
    assert levels.valid_per_million_low >= cost.min_valid_per_million
    assert 0 < levels.threshold <= levels.skip


BAD_CALIBRATIONS = [
    (
        {"comments": 0, "share": 0.5, "candidates": [[0.5, 1]]},
        "comments must be a whole number above 0, not 0",
    ),
    ({"comments": 10, "share": 0, "candidates": [[0.5, 1]]}, "share must be a number in (0, 1], not 0"),
    (
        {"comments": 10, "share": 0.5, "candidates": [[0.5, "false"]]},
        "candidate 1: the verdict must be 0 or 1",
    ),
    ({"comments": 10, "share": 0.5, "candidates": [[0.2, 0], [1.5, 1]]}, "candidate 2: the score must be"),
    ({"comments": 10, "share": 0.5, "candidates": [[0.2]]}, "candidate 1: not a [score, verdict] pair"),
    ({"comments": True, "share": 0.5, "candidates": []}, "comments must be a whole number above 0, not True"),
    ([1, 2], "an object with comments, share and candidates"),
]


@pytest.mark.parametrize(("data", "problem"), BAD_CALIBRATIONS)
def test_a_calibration_no_run_can_use_is_refused_naming_the_file(
    tmp_path: Path, data: object, problem: str
) -> None:
    path = tmp_path / "calibration.json"
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(UserError) as raised:
        read_calibration(path)
    assert str(path) in str(raised.value) and problem in str(raised.value)


def test_a_broken_shipped_calibration_is_one_line_from_cost_and_config(tmp_path: Path) -> None:
    """A data folder whose calibration has no comments: `knowref60k cost` and `knowref60k config` say so
    in one line each, naming the file, with no traceback."""
    data = tmp_path / "data"
    shutil.copytree(REPO / "data", data)
    calibration = data / "scorer" / "calibration.json"
    shipped = orjson.loads(calibration.read_bytes())
    calibration.write_bytes(orjson.dumps({**shipped, "comments": 0}))
    environment = {**os.environ, "KNOWREF60K_DATA_DIR": str(data)}
    for command in ("cost", "config"):
        run = subprocess.run(
            [sys.executable, "-m", "knowref60k", command],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = (run.stdout + run.stderr).strip().splitlines()
        assert run.returncode == 2, (command, run.stdout, run.stderr)
        assert lines == [
            f"error: {calibration}: not a calibration file (comments must be a whole number "
            "above 0, not 0); `knowref60k measure-extraction` writes one to copy there"
        ], (command, lines)


@pytest.mark.parametrize("where", ["option", "file"])
def test_a_negative_threshold_other_than_the_cost_models_marker_is_refused(
    tmp_path: Path, where: str
) -> None:
    """-1 leaves the threshold to the cost model; -0.5 is no score and no marker: one line, exit 2 (it
    silently meant "chosen by cost")."""
    config = write_config(tmp_path, "[prepare]\nvalidity_threshold = -0.5\n" if where == "file" else "")
    arguments = ["prepare", str(tmp_path / "none.candidates.parquet"), "--out", str(tmp_path / "items")]
    arguments += ["--config", str(config)] + (["--validity-threshold", "-0.5"] if where == "option" else [])
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    expected = (
        "greater than or equal to 0" if where == "option" else "left out to be chosen by cost), not -0.5"
    )
    assert expected in text, text
