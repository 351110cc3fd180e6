"""The pipeline's own record of what it made in one Label Studio server: the id of each stage's project
when it made it, and every task it imported with the data it gave the task.

Label Studio Community lets any account change a task's data or make a project with the same title; what
the pipeline acts on (which project is a stage's, which item a task holds, what each shown answer means,
whether the careful rule applies) comes from here, and what Label Studio shows differently is reported.

Both files live in the server's state folder, under `records/`: `projects.json` (rewritten whole, under
a lock) and `tasks.jsonl` (appended under the same lock, read incrementally by every process).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.io import appended_rows, write_json_atomic
from knowref60k.labelling.separation import TASK_DATA_CHANGED, TASK_NOT_RECORDED

from .settings import Settings, state_lock

# The keys of a task's data an annotator sees (the label configs' `$sentence_html` and `$options`): a vote
# cast on a task whose shown data is not what the pipeline gave it is refused.
SHOWN_KEYS = ("sentence_html", "options")
LOCK = "records"


@dataclass(frozen=True)
class RecordedTask:
    task_id: int
    project: int
    stage: str
    data: dict[str, Any]
    # The item the task holds where its data names another id (a control's data names a disguised one).
    item: str | None = None
    # The item's original sentence (kept here, not in Label Studio): no control of the same one is drawn.
    sentence: str | None = None

    @property
    def item_id(self) -> str:
        return self.item or str(self.data["item_id"])

    def with_annotations(self, annotations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The task as an export gives it, with its recorded data naming the item it holds."""
        return {
            "id": self.task_id,
            "data": {**self.data, "item_id": self.item_id},
            "annotations": annotations,
        }


def data_problem(recorded: RecordedTask | None, shown: Any) -> str | None:
    """Why a task's votes cannot be taken as Label Studio shows the task (`shown`, its data there), or
    None: it is not one the pipeline imported, or what annotators see of it is not what the pipeline gave."""
    if recorded is None:
        return TASK_NOT_RECORDED
    if not isinstance(shown, Mapping) or any(shown.get(k) != recorded.data.get(k) for k in SHOWN_KEYS):
        return TASK_DATA_CHANGED
    return None


def hidden_changes(recorded: RecordedTask, shown: Any) -> list[str]:
    """The keys of the task's data that differ from the record without being shown (`answer_identity`,
    `item_id`, `careful` ...): reported; the record is what counts."""
    shown = shown if isinstance(shown, Mapping) else {}
    keys = sorted(set(recorded.data) | {str(key) for key in shown})
    return [key for key in keys if key not in SHOWN_KEYS and shown.get(key) != recorded.data.get(key)]


class Records:
    """The records of `settings`' server and project name."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.folder = settings.state_dir / "records"
        self.server = settings.url.rstrip("/")
        # By (project, task id): Label Studio reuses the id of a deleted task on SQLite.
        self._tasks: dict[tuple[int, int], RecordedTask] = {}
        self._by_item: dict[tuple[int, str], int] = {}
        self._offset = 0
        self._lock = threading.Lock()

    @property
    def projects_file(self) -> Path:
        return self.folder / "projects.json"

    @property
    def tasks_file(self) -> Path:
        return self.folder / "tasks.jsonl"

    def _key(self, title: str) -> str:
        return f"{self.server} {title}"

    def _projects(self) -> dict[str, dict[str, Any]]:
        if not self.projects_file.exists():
            return {"current": {}, "retired": {}}
        known: dict[str, dict[str, Any]] = orjson.loads(self.projects_file.read_bytes())
        return known

    def project(self, title: str) -> int | None:
        """The id of the project the pipeline made (or adopted) under `title` on this server."""
        found = self._projects()["current"].get(self._key(title))
        return found if isinstance(found, int) else None

    def retired(self, title: str) -> list[int]:
        """The projects once recorded under `title` and forgotten since (gone from Label Studio): their
        votes seen still count."""
        return list(self._projects()["retired"].get(self._key(title), []))

    def record_project(self, title: str, project_id: int) -> None:
        with state_lock(self.settings, LOCK):
            known = self._projects()
            known["current"][self._key(title)] = project_id
            self.folder.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.projects_file, known)

    def forget_project(self, title: str) -> int | None:
        """Retire the project recorded under `title`, so that the next push makes a new one; returns its
        id."""
        with state_lock(self.settings, LOCK):
            known = self._projects()
            dropped = known["current"].pop(self._key(title), None)
            if isinstance(dropped, int):
                known["retired"].setdefault(self._key(title), []).append(dropped)
                write_json_atomic(self.projects_file, known)
        return dropped if isinstance(dropped, int) else None

    def record_tasks(
        self, project: int, stage: str, tasks: Iterable[tuple[int, dict[str, Any], str, str | None]]
    ) -> None:
        """Record tasks just imported: (Label Studio's task id, the data the pipeline gave it, the item,
        its original sentence)."""
        lines = [
            orjson.dumps(
                {"server": self.server, "task_id": tid, "project": project, "stage": stage, "data": d}
                | ({"item_id": item} if item != d["item_id"] else {})
                | ({"sentence": sentence} if sentence else {})
            )
            + b"\n"
            for tid, d, item, sentence in tasks
        ]
        with state_lock(self.settings, LOCK):
            self.folder.mkdir(parents=True, exist_ok=True)
            with self.tasks_file.open("ab") as handle:
                handle.write(b"".join(lines))

    def task(self, project: int, task_id: int) -> RecordedTask | None:
        with self._lock:
            if (project, task_id) not in self._tasks:
                self._read_new()
            return self._tasks.get((project, task_id))

    def task_of_item(self, project: int, item_id: str) -> int | None:
        with self._lock:
            self._read_new()
            return self._by_item.get((project, item_id))

    def tasks_of(self, project: int) -> dict[int, RecordedTask]:
        with self._lock:
            self._read_new()
            return {tid: task for (of, tid), task in self._tasks.items() if of == project}

    def _read_new(self) -> None:
        rows, self._offset = appended_rows(self.tasks_file, self._offset)
        for row in rows:
            if row["server"] != self.server:
                continue
            task = RecordedTask(
                int(row["task_id"]),
                int(row["project"]),
                row["stage"],
                row["data"],
                row.get("item_id"),
                row.get("sentence"),
            )
            self._tasks[(task.project, task.task_id)] = task
            self._by_item.setdefault((task.project, task.item_id), task.task_id)
