"""Every annotation the pipeline has seen in Label Studio, kept locally and append-only, with each later
change: what a vote was when the pipeline first saw it is what counts.

Label Studio Community lets any account change or delete another's annotation, or delete a whole project
with its votes; the receiver and every collect add what they read here (`records/annotations.jsonl` in the
server's state folder), so a vote once seen survives whatever is done to it there. A later version of an
annotation (another choice, another author, a skip) is kept as a line of its own and reported, not counted;
an annotation gone from Label Studio still counts as first seen, and is reported.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.io import appended_rows

from .settings import Settings, state_lock

# What is kept of an annotation, besides its id: who it is for, who wrote it, what it says, when.
KEPT = ("completed_by", "updated_by", "was_cancelled", "result", "created_at", "updated_at", "lead_time")
# What makes a later version a change (a new `updated_at` alone is none).
CONTENT = ("completed_by", "updated_by", "was_cancelled", "result")
LOCK = "ledger"


def _id_of(value: Any) -> Any:
    return value.get("id") if isinstance(value, Mapping) else value


def kept(annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The annotation as the ledger keeps it (accounts by id)."""
    fields = {name: annotation.get(name) for name in KEPT}
    fields["completed_by"], fields["updated_by"] = (
        _id_of(fields["completed_by"]),
        _id_of(fields["updated_by"]),
    )
    return {"id": annotation.get("id"), **fields}


def content(annotation: Mapping[str, Any]) -> bytes:
    shown = kept(annotation)
    return orjson.dumps([shown[name] for name in CONTENT], option=orjson.OPT_SORT_KEYS, default=str)


@dataclass
class Seen:
    """What the ledger holds of one project: each annotation's first version by task, and the annotations
    whose last version seen differs from their first."""

    first_by_task: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    changed: set[tuple[int, int]] = field(default_factory=set)  # (task, annotation)


class VoteLedger:
    """The ledger of `settings`' server."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server = settings.url.rstrip("/")
        self.file: Path = settings.state_dir / "records" / "annotations.jsonl"
        # By (project, task, annotation): Label Studio reuses a deleted row's id on SQLite.
        self._first: dict[tuple[int, int, int], dict[str, Any]] = {}
        # The content of each annotation's first and of its last version seen.
        self._first_content: dict[tuple[int, int, int], bytes] = {}
        self._last: dict[tuple[int, int, int], bytes] = {}
        self._tasks_of: dict[int, dict[int, list[int]]] = defaultdict(dict)  # project -> task -> annotations
        self._offset = 0
        self._lock = threading.Lock()

    def observe(self, project: int, tasks: Iterable[tuple[int, Iterable[Mapping[str, Any]]]]) -> int:
        """Add every annotation of the (task id, annotations) pairs that is new, or differs from its last
        version seen; returns how many lines were added."""
        with self._lock, state_lock(self.settings, LOCK):
            self._read_new()
            now = datetime.now(UTC).isoformat()
            lines = []
            for task_id, annotations in tasks:
                for annotation in annotations:
                    if not isinstance(annotation.get("id"), int) or isinstance(annotation.get("id"), bool):
                        continue
                    if self._last.get((project, task_id, annotation["id"])) == content(annotation):
                        continue
                    row = {"server": self.server, "project": project, "task_id": task_id, "seen_at": now}
                    lines.append(orjson.dumps({**row, "annotation": kept(annotation)}, default=str) + b"\n")
            if lines:
                self.file.parent.mkdir(parents=True, exist_ok=True)
                with self.file.open("ab") as handle:
                    handle.write(b"".join(lines))
                self._read_new()
            return len(lines)

    def seen(self, project: int, tasks: Iterable[int] | None = None) -> Seen:
        """The project's annotations as first seen (of `tasks` only, when given)."""
        with self._lock:
            self._read_new()
            of_project = self._tasks_of.get(project, {})
            found = Seen()
            for task_id in of_project if tasks is None else tasks:
                for annotation_id in of_project.get(task_id, []):
                    key = (project, task_id, annotation_id)
                    found.first_by_task[task_id].append(self._first[key])
                    if self._last[key] != self._first_content[key]:
                        found.changed.add((task_id, annotation_id))
            return found

    def _read_new(self) -> None:
        rows, self._offset = appended_rows(self.file, self._offset)
        for row in rows:
            if row["server"] != self.server:
                continue
            annotation = row["annotation"]
            key = (row["project"], row["task_id"], annotation["id"])
            self._last[key] = content(annotation)
            if key not in self._first:
                self._first[key], self._first_content[key] = annotation, self._last[key]
                self._tasks_of[row["project"]].setdefault(row["task_id"], []).append(annotation["id"])
