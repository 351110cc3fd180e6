"""Paused accounts: an annotator whose accuracy on control items falls below the level the labelling
config sets, once it has answered enough of them, is paused. Its votes are set aside (kept, reported, not
counted) wherever votes are read, the access gate takes its projects from it, and the lead resumes it by
hand (`knowref60k annotate resume EMAIL`); from then on only the controls it answers after the resume
count towards pausing it again.

The record lives in the server's state folder, `records/paused.json` (rewritten whole, under a lock):
{"paused": {email: {...why...}}, "resumed": {email: {"controls_before": n, ...}}}.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.io import write_json_atomic
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.quality import right_on_control

from .settings import Settings, state_lock

log = logging.getLogger(__name__)
LOCK = "pauses"


@dataclass(frozen=True)
class ControlTally:
    controls: int = 0
    right: int = 0

    def __add__(self, other: ControlTally) -> ControlTally:
        return ControlTally(self.controls + other.controls, self.right + other.right)

    @property
    def accuracy(self) -> float | None:
        return round(self.right / self.controls, 4) if self.controls else None


def control_tallies(
    votes: Iterable[Mapping[str, Any]], answers: Mapping[str, str], annotator_key: str = "annotator_id"
) -> dict[Any, ControlTally]:
    """Each annotator's control votes and how many of them were right."""
    counts: dict[Any, list[int]] = {}
    for vote in votes:
        answer = answers.get(vote["item_id"])
        if answer is not None:
            found = counts.setdefault(vote[annotator_key], [0, 0])
            found[0] += 1
            found[1] += right_on_control(vote["choice"], answer)
    return {annotator: ControlTally(*found) for annotator, found in counts.items()}


def pause_reason(tally: ControlTally) -> str:
    return f"{tally.right} of {tally.controls} control items right ({tally.accuracy})"


class Pauses:
    """The paused and resumed accounts of one server (by email)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.path: Path = settings.state_dir / "records" / "paused.json"

    def read(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {"paused": {}, "resumed": {}}
        found: dict[str, dict[str, Any]] = orjson.loads(self.path.read_bytes())
        return found

    def paused(self) -> dict[str, dict[str, Any]]:
        return self.read()["paused"]

    def due(self, email: str, tally: ControlTally, config: LabellingConfig) -> bool:
        """Whether this tally pauses the account: the controls it answered since it was last resumed are at
        least `pause_after_controls`, and fewer than `pause_below_accuracy` of them right."""
        since = self.read()["resumed"].get(email, {})
        controls = tally.controls - int(since.get("controls_before", 0))
        right = tally.right - int(since.get("right_before", 0))
        return config.pauses(controls, right)

    def pause(self, email: str, tally: ControlTally | None, why: str) -> bool:
        """Pause the account (False when it already is)."""
        with state_lock(self.settings, LOCK):
            known = self.read()
            if email in known["paused"]:
                return False
            known["paused"][email] = {
                "since": _now(),
                "why": why,
                "controls": tally.controls if tally else None,
                "control_accuracy": tally.accuracy if tally else None,
            }
            self._write(known)
        log.warning("paused %s: %s", email, why)
        return True

    def resume(self, email: str, tally: ControlTally) -> bool:
        """Resume the account (False when it was not paused); its controls so far no longer count."""
        with state_lock(self.settings, LOCK):
            known = self.read()
            if known["paused"].pop(email, None) is None:
                return False
            known["resumed"][email] = {
                "at": _now(),
                "controls_before": tally.controls,
                "right_before": tally.right,
            }
            self._write(known)
        return True

    def _write(self, known: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, known)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
