"""`annotate status`: where the labelling stands, read from what the last `collect` wrote, as data and
as a plain table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.io import read_rows
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import control_answers
from knowref60k.labelling.cost_model import CostConfig
from knowref60k.labelling.status import PASSED_ON, paces, status

VOTE_COLUMNS = ["stage", "item_id", "annotation_id", "annotator_id", "choice", "created_at", "updated_at"]
TASK_COLUMNS = ["stage", "item_id", "task_id", "is_labeled"]
TRUST_REPORT = ("differences", "projects_gone", "lookalike_projects")


def read_status(out: Path, config: LabellingConfig, cost: CostConfig) -> dict[str, Any]:
    report_path = out / "collect.json"
    if not report_path.is_file():
        raise UserError(
            f"{report_path} not found: collect the votes first (knowref60k annotate collect --out {out})"
        )
    report = orjson.loads(report_path.read_bytes())
    # `careful` is missing from a collect of a version before careful screening: no task was then.
    tasks: list[Mapping[str, Any]] = list(
        read_rows(out / "tasks.parquet", TASK_COLUMNS, "tasks", optional=["careful"])
    )
    votes: list[Mapping[str, Any]] = list(
        read_rows(out / "votes.parquet", VOTE_COLUMNS, "votes", optional=["lead_time"])
    )
    emails = {int(uid): email for uid, email in report.get("emails", {}).items()}
    refused = report.get("refused_votes", {})
    answers = control_answers(config.controls)
    found = status(tasks, votes, config, answers, emails, refused, paces(config, cost))
    found["collected_at"] = report.get("collected_at")
    paused = report.get("paused_accounts", {})
    for email, annotator in found["annotators"].items():
        annotator["paused"] = paused.get(email)
    # A paused account's votes are all set aside: its row says so with the controls that paused it.
    for email in sorted(set(paused) - set(found["annotators"])):
        found["annotators"][email] = {
            "stage": None,
            "votes": 0,
            "agreement_with_decision": None,
            "control_votes": paused[email]["controls"],
            "control_accuracy": paused[email]["control_accuracy"],
            "person_hours": 0.0,
            "paused": paused[email],
        }
    found["paused"] = paused
    # What Label Studio showed differently from the pipeline's records at that collect.
    found["label_studio"] = {key: report.get(key, {}) for key in TRUST_REPORT}
    return found


def _value(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else str(value)


def render_status(found: dict[str, Any]) -> str:
    """Plain text: when the collect read was made, a row per stage, the loop, then a row per annotator."""
    columns = ["items", "waiting", "in_progress", "decided", "item_votes", "control_votes", "votes"]
    columns += ["late_votes", "votes_per_decided_item", "projected_votes_to_finish"]
    columns += ["person_hours", "expected_person_hours", "projected_person_hours_to_finish"]
    rows = [["stage", *columns, "passed on", "outcomes"]]
    for stage, state in found["stages"].items():
        outcomes = ", ".join(f"{name} {count:,}" for name, count in state["outcomes"].items()) or "-"
        passed = f"{_value(state[PASSED_ON[stage]])} {PASSED_ON[stage]}"
        rows.append([stage, *(_value(state[c]) for c in columns), passed, outcomes])
    lines = [
        f"as of the collect made {found.get('collected_at') or 'before collects were dated'}",
        *_table(rows),
    ]
    lines.append(
        f"kept {found['kept']:,}; votes {found['votes']:,} over both stages, "
        f"{_value(found['votes_per_kept_item'])} per kept item, {found['person_hours']} person-hours; "
        f"set aside {found['refused_votes'] or 'none'}"
    )
    differs = {key: value for key, value in found.get("label_studio", {}).items() if value}
    if differs:
        lines.append(f"Label Studio against the pipeline's records (votes count as first seen): {differs}")
    for email, paused in found.get("paused", {}).items():
        lines.append(
            f"PAUSED {email} since {paused['since']}: {paused['why']}; its votes are set aside "
            f"(knowref60k annotate resume {email})"
        )
    people = [["annotator", "stage", "votes", "person_hours", "agreement_with_decision"]]
    people[0] += ["control_votes", "control_accuracy", "paused"]
    for name, quality in found["annotators"].items():
        cells = [_value(quality[c]) for c in people[0][1:-1]]
        people.append([name, *cells, "PAUSED" if quality.get("paused") else "-"])
    return "\n".join([*lines, "", *_table(people)])


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
