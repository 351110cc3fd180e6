"""Paused accounts: an annotator whose accuracy on control items falls below the level the labelling
config sets, once it has answered enough of them, is paused. Its votes are set aside (kept, reported, not
counted) wherever votes are read, the access gate grants it nothing, and the lead resumes it by hand
(`knowref60k annotate resume EMAIL`); from then on only the control votes it casts after the resume count
towards pausing it again.

The record lives in the server's state folder, `records/paused.json` (rewritten whole, under a lock):
{"paused": {email: {"user_id", "since", "why", "controls", "control_accuracy"}}, "resumed": {email: time}}.
Accounts are named by email: the access gate lets no annotator change its own.
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

    @property
    def accuracy(self) -> float | None:
        return round(self.right / self.controls, 4) if self.controls else None


def control_tally(votes: Iterable[Mapping[str, Any]], answers: Mapping[str, str]) -> ControlTally:
    """How many of the votes are on control items, and how many of those are right."""
    judged = [
        right_on_control(vote["choice"], answers[vote["item_id"]])
        for vote in votes
        if vote["item_id"] in answers
    ]
    return ControlTally(len(judged), sum(judged))


def by_annotator(votes: Iterable[Mapping[str, Any]]) -> dict[int, list[Mapping[str, Any]]]:
    found: dict[int, list[Mapping[str, Any]]] = {}
    for vote in votes:
        found.setdefault(vote["annotator_id"], []).append(vote)
    return found


def pause_reason(tally: ControlTally) -> str:
    return f"{tally.right} of {tally.controls} control items right ({tally.accuracy})"


class Pauses:
    """The paused and resumed accounts of one server."""

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

    def pause_if_due(
        self,
        email: str,
        user_id: int,
        votes: Iterable[Mapping[str, Any]],
        answers: Mapping[str, str],
        config: LabellingConfig,
    ) -> bool:
        """Pause the account when its control votes cast since it was last resumed (all of them, if it
        never was) call for it; True when this paused it. Decided and written under the lock, so that a
        resume in between is not overturned by a tally from before it."""
        with state_lock(self.settings, LOCK):
            known = self.read()
            if email in known["paused"]:
                return False
            since = known["resumed"].get(email)
            tally = control_tally([v for v in votes if _cast_after(v["created_at"], since)], answers)
            if not config.pauses(tally.controls, tally.right):
                return False
            self._record(known, email, user_id, pause_reason(tally), tally)
        log.warning("paused %s: %s", email, pause_reason(tally))
        return True

    def pause(self, email: str, user_id: int, why: str) -> bool:
        """Pause the account by hand (False when it already is)."""
        with state_lock(self.settings, LOCK):
            known = self.read()
            if email in known["paused"]:
                return False
            self._record(known, email, user_id, why, None)
        return True

    def resume(self, email: str) -> dict[str, Any] | None:
        """Resume the account; its pause record, None when it was not paused."""
        with state_lock(self.settings, LOCK):
            known = self.read()
            found: dict[str, Any] | None = known["paused"].pop(email, None)
            if found is not None:
                known["resumed"][email] = _now()
                self._write(known)
        return found

    def _record(
        self, known: dict[str, Any], email: str, user_id: int, why: str, tally: ControlTally | None
    ) -> None:
        known["paused"][email] = {
            "user_id": user_id,
            "since": _now(),
            "why": why,
            "controls": tally.controls if tally else None,
            "control_accuracy": tally.accuracy if tally else None,
        }
        self._write(known)

    def _write(self, known: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, known)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _cast_after(created: Any, since: str | None) -> bool:
    """Whether a vote created at `created` (a time Label Studio gave; UTC when it names no zone) was cast
    after `since` (None: always)."""
    if since is None:
        return True
    when = created if isinstance(created, datetime) else datetime.fromisoformat(str(created))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) > datetime.fromisoformat(since)
