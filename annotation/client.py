"""One Label Studio server through its SDK: a project per stage, pushing tasks, closing decided ones,
and the users.

Every call that fails because of the server (down, token refused, project deleted) raises a UserError
or ServiceUnavailable with what to do; local state is written only after the server confirmed a change.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.core.io import distinct_files, read_rows
from knowref60k.labelling.decisions import RESOLUTION, SCREENING

from .labelstudio_app.labelstudio_contract import ITEM_FILTER, TASK_COLUMNS
from .settings import Settings, receiver_url, state_lock, webhook_secret
from .tasks import TASK_BUILDERS
from .webhooks import WebhookReview, WebhookSpec, review

log = logging.getLogger(__name__)
T = TypeVar("T")

HERE = Path(__file__).resolve().parent
ITEM_COLUMNS = [
    "candidate_id",
    "source_file",
    "sentence",
    "antecedent1_start",
    "antecedent1_end",
    "antecedent2_start",
    "antecedent2_end",
    "pronoun_start",
    "pronoun_end",
    "perturbed_sentence",
    "name1",
    "name2",
    "perturbed_pronoun_start",
    "perturbed_pronoun_end",
]
# An item's chance of being a valid problem, when the extractor gave one: served first when high.
SCORE_COLUMN = "validity_score"
PRIORITY_MODEL = "knowref60k-validity"
# How the stream picks a task. On PostgreSQL, the lowest task id the annotator may take: tasks are imported
# best first, and a task started is finished before a later one is opened (with few slots per task,
# breadth-first alone leaves tasks half-done while new ones are opened). On SQLite, Label Studio picks a
# task without a transaction, so annotators sent to the same task take more slots than it has: there the
# best-scored tasks are served first but spread among the annotators (uncertainty sampling on the score).
SAMPLING = {"sqlite": "Uncertainty sampling"}
DEFAULT_SAMPLING = "Sequential sampling"
ANNOTATOR_VIEW = "Tasks"
TITLE_LIMIT = 50
# The data manager shows every column a view does not hide, raw markup and other annotators' answers
# included; the annotators' view leaves the task id, the sentence as text, and how far each task has got.
DATA_KEYS = ("item_id", "sentence_html", "options", "answer_identity", "source_file")
HIDDEN_COLUMNS = sorted(
    {f"tasks:{column}" for column in TASK_COLUMNS} | {f"tasks:data.{key}" for key in DATA_KEYS}
)


@dataclass(frozen=True)
class StageProject:
    """What a stage's project looks like in Label Studio."""

    stage: str
    suffix: str
    from_name: str
    description: str

    @property
    def label_config(self) -> str:
        return (HERE / f"{self.stage}_config.xml").read_text(encoding="utf-8")

    @property
    def guidelines(self) -> str:
        return (HERE / f"{self.stage}_guidelines.html").read_text(encoding="utf-8")


STAGE_PROJECTS = {
    SCREENING: StageProject(
        SCREENING, " - screening", "screening", "Is this a valid problem? (knowref60k screening)"
    ),
    RESOLUTION: StageProject(
        RESOLUTION, "", "referent", "Who does the highlighted pronoun refer to? (knowref60k)"
    ),
}


@dataclass(frozen=True)
class PushReport:
    items: int
    already_there: int
    pushed: int
    tasks_in_project: int


class LabelStudioClient:
    """One server, addressed with the admin's API token; a project per stage, named after the settings'
    project (the resolution project carries that name, the screening project adds " - screening")."""

    def __init__(self, settings: Settings, timeout: float = 120.0, api_url: str | None = None) -> None:
        """`api_url`: where to send the API requests, if not to the server's URL (the same server's
        settle worker, knowref60k_annotation.server); webhooks and messages still name the server."""
        self.settings = settings
        self.api_url = api_url or settings.url
        self.sdk = LabelStudio(base_url=self.api_url, api_key=settings.api_key, timeout=timeout)  # type: ignore[no-untyped-call]
        # Projects made with another `maximum_annotations` than the rule's initial overlap: the overlap
        # their new tasks are given after import.
        self.overlap_at_import: dict[int, int] = {}
        self.webhook_changes: list[str] = []
        # Projects whose webhooks this client has reviewed (a long-lived client reviews a project once).
        self.reviewed: set[int] = set()

    def __enter__(self) -> LabelStudioClient:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run an SDK call; a server that is down, refuses the token or fails becomes a UserError."""
        try:
            return function(*args, **kwargs)
        except httpx.TransportError as error:
            raise ServiceUnavailable(
                f"Label Studio is not reachable at {self.api_url} ({error}); start it with `make labelstudio`"
            ) from None
        except ApiError as error:
            if error.status_code == 401:
                raise UserError(
                    f"Label Studio at {self.api_url} refused the API token (401); "
                    "check LABEL_STUDIO_API_KEY in .env"
                ) from None
            kind = ServiceUnavailable if (error.status_code or 0) >= 500 else UserError
            raise kind(f"Label Studio request failed: {error.status_code} {str(error.body)[:300]}") from None

    # ---- projects ----

    def title(self, stage: str) -> str:
        """Label Studio refuses titles over 50 characters: the name is cut to leave room for the suffix."""
        suffix = STAGE_PROJECTS[stage].suffix
        return self.settings.project[: TITLE_LIMIT - len(suffix)] + suffix

    def find_project(self, stage: str) -> Any | None:
        title = self.title(stage)
        projects: list[Any] = self.call(lambda: list(self.sdk.projects.list(title=title)))
        return next((project for project in projects if project.title == title), None)

    def ensure_project(self, stage: str, initial_overlap: int) -> int:
        """The stage's project id, creating it if it does not exist, with the annotators' data-manager
        view and the webhook that settles each vote. `initial_overlap` (the annotators a task nobody has
        voted on admits) becomes its `maximum_annotations`, which Label Studio gives every imported task;
        it is never changed afterwards (Label Studio resets every task's overlap when it changes): tasks
        imported into an older project that admits more get their overlap set one by one."""
        project = self.find_project(stage)
        if project is None:
            spec = STAGE_PROJECTS[stage]
            project = self.call(
                self.sdk.projects.create,
                title=self.title(stage),
                description=spec.description,
                label_config=spec.label_config,
                expert_instruction=spec.guidelines,
                show_instruction=True,
                show_skip_button=True,
                maximum_annotations=initial_overlap,
                sampling=self.sampling,
                model_version=PRIORITY_MODEL,
                show_collab_predictions=False,
            )
            log.info("created project %s (%s)", project.id, self.title(stage))
        project_id = int(project.id or 0)
        if project.sampling != self.sampling:
            self.call(self.sdk.projects.update, project_id, sampling=self.sampling)
        if project.maximum_annotations != initial_overlap:
            self.overlap_at_import[project_id] = initial_overlap
        self.ensure_annotator_view(project_id)
        if project_id not in self.reviewed:
            self.review_webhooks([project_id])
        return project_id

    @property
    def sampling(self) -> str:
        return SAMPLING.get(self.settings.database, DEFAULT_SAMPLING)

    def review_webhooks(self, projects: Collection[int]) -> list[str]:
        """Keep the webhooks of our `projects` as the pipeline set them (webhooks.py): remove any
        other that sends their events, restore ours, make it where it is missing; one review at a time
        per server, and a webhook gone meanwhile is no error. Returns a line for each change, also logged
        and kept in `webhook_changes`."""
        spec = WebhookSpec(receiver_url(self.settings), webhook_secret(self.settings))
        with state_lock(self.settings, "webhooks"):
            hooks = [hook.model_dump(mode="json") for hook in self.call(self.sdk.webhooks.list)]
            found = review(hooks, projects, spec)
            made = self._apply(found, {int(hook["id"]): hook.get("project") for hook in hooks}, spec)
        for line in found.lines:
            log.warning("%s", line)
        for line in made:
            log.info("%s", line)
        self.reviewed.update(projects)
        self.webhook_changes += found.lines + made
        return found.lines + made

    def _apply(self, found: WebhookReview, project_of: dict[int, Any], spec: WebhookSpec) -> list[str]:
        """Carry out a review; returns a line for each webhook made (ours was missing, or went away
        while it was being restored)."""
        delete, update = (
            self._unless_gone(self.sdk.webhooks.delete),
            self._unless_gone(self.sdk.webhooks.update),
        )
        for hook_id in found.remove:
            self.call(delete, hook_id)
        missing = list(found.create)
        for hook_id in found.restore:
            if self.call(update, hook_id, url=spec.url, **spec.fields()) is None:
                missing.append(int(project_of[hook_id]))
        for project in missing:
            self.call(self.sdk.webhooks.create, url=spec.url, project=project, **spec.fields())
        return [f"made the webhook of project {project}: it had none" for project in missing]

    @staticmethod
    def _unless_gone(function: Callable[..., T]) -> Callable[..., T | None]:
        """`function`, answering None where Label Studio answers 404 (the thing is gone)."""

        def called(*args: Any, **kwargs: Any) -> T | None:
            try:
                return function(*args, **kwargs)
            except ApiError as error:
                if error.status_code == 404:
                    return None
                raise

        return called

    def ensure_annotator_view(self, project: int) -> None:
        """The project's data-manager tab for annotators: the sentence as text, no markup, ids or answers.
        Views belong to the project, so every user of the organization sees this one."""
        views: list[Any] = self.call(self.sdk.views.list, project=project)
        if any((view.data or {}).get("title") == ANNOTATOR_VIEW for view in views):
            return
        hidden = {"explore": HIDDEN_COLUMNS, "labeling": HIDDEN_COLUMNS}
        self.call(
            self.sdk.views.create, project=project, data={"title": ANNOTATOR_VIEW, "hiddenColumns": hidden}
        )

    def existing_project(self, stage: str) -> int:
        found = self.find_project(stage)
        if found is None:
            raise UserError(
                f"project {self.title(stage)!r} not found at {self.settings.url} (deleted?); "
                "push items first: knowref60k annotate push ITEMS..."
            )
        return int(found.id)

    def export(self, project: int) -> list[dict[str, Any]]:
        """Every task of the project with its data and annotations."""
        tasks: list[dict[str, Any]] = self.call(self.sdk.projects.exports.as_json, project, timeout=600)
        return tasks

    def stored_task(self, task_id: int) -> dict[str, Any] | None:
        """The task as Label Studio stores it (data, annotations, overlap, is_labeled, project); None when
        there is no such task."""
        found = self.call(self._unless_gone(self.sdk.tasks.get), str(task_id))
        return None if found is None else found.model_dump(mode="json")

    def annotations(self, task_id: int) -> list[dict[str, Any]]:
        """Every annotation of the task as stored (none when the task is gone)."""
        found = self.call(self._unless_gone(self.sdk.annotations.list), id=task_id)
        return [annotation.model_dump(mode="json") for annotation in found or []]

    # ---- pushing ----

    def push(
        self,
        items: Iterable[Mapping[str, Any]],
        stage: str,
        initial_overlap: int,
        seed: int,
        batch_size: int = 1000,
    ) -> PushReport:
        """Import items not yet in the stage's project, in batches. The server is the record of what is
        there, so a push that was interrupted (or repeated) imports only what is missing."""
        project = self.ensure_project(stage, initial_overlap)
        present = {task["data"]["item_id"] for task in self.export(project)}
        total = pushed = 0
        missing: list[Mapping[str, Any]] = []
        for item in items:
            total += 1
            if item["candidate_id"] not in present:
                present.add(item["candidate_id"])
                missing.append(item)
        # Label Studio serves the lowest task id first: imported best first.
        missing.sort(key=_priority)
        for start in range(0, len(missing), batch_size):
            pushed += self.import_tasks(project, stage, missing[start : start + batch_size], seed)
        return PushReport(total, total - pushed, pushed, len(present))

    def import_tasks(self, project: int, stage: str, items: list[Mapping[str, Any]], seed: int) -> int:
        """The items as tasks of the stage; returns how many were imported."""
        tasks = [_with_priority(TASK_BUILDERS[stage](item, seed), item) for item in items]
        result = self.call(self.sdk.projects.import_tasks, project, request=tasks, return_task_ids=True)
        log.info("imported %d tasks", result.task_count)
        overlap = self.overlap_at_import.get(project)
        # Community's synchronous import answers with the new tasks' ids.
        for task_id in getattr(result, "task_ids", None) or [] if overlap else []:
            self.call(self.sdk.tasks.update, str(task_id), overlap=overlap)
        return int(result.task_count or 0)

    def has_item(self, project: int, item_id: str) -> bool:
        """Whether the project holds a task of the item (one filtered query, not an export)."""
        condition = {**ITEM_FILTER, "value": item_id}
        query = json.dumps({"filters": {"conjunction": "and", "items": [condition]}})
        found: list[Any] = self.call(
            lambda: list(self.sdk.tasks.list(project=project, query=query, fields="task_only", page_size=10))
        )
        return any(task.data.get("item_id") == item_id for task in found)

    # ---- closing ----

    def set_queue_state(self, task_id: int, overlap: int, closed: bool) -> None:
        """Closing takes a decided task out of every annotator's queue: its overlap down to the votes it
        has, and labelled (changing only the overlap leaves it in the data manager's next-task path).
        Reopening raises the overlap above them."""
        self.call(self.sdk.tasks.update, str(task_id), overlap=overlap, is_labeled=closed)

    # ---- people ----

    def users(self) -> list[dict[str, Any]]:
        return [{"id": int(user.id), "email": user.email} for user in self.call(self.sdk.users.list)]

    def user_id(self, email: str) -> int:
        found = [user["id"] for user in self.users() if user["email"] == email]
        if not found:
            raise UserError(f"no user {email} at {self.settings.url}")
        return int(found[0])


def _with_priority(task: dict[str, Any], item: Mapping[str, Any]) -> dict[str, Any]:
    """Uncertainty sampling serves the lowest prediction score first: an item more likely valid scores
    lower (the score stays hidden from annotators)."""
    score = item.get(SCORE_COLUMN)
    if score is not None:
        task["predictions"] = [{"model_version": PRIORITY_MODEL, "score": 1.0 - float(score), "result": []}]
    return task


def _priority(item: Mapping[str, Any]) -> tuple[bool, float]:
    """Items more likely valid first, items without a validity score after them."""
    score = item.get(SCORE_COLUMN)
    return (score is None, -float(score or 0.0))


def read_items(paths: Iterable[Path], columns: list[str] = ITEM_COLUMNS) -> Iterator[dict[str, Any]]:
    """The items' task fields, and their validity score where the file has one; a file given twice (or by
    two spellings) is read once."""
    for path in distinct_files(paths):
        yield from read_rows(path, columns, "items", optional=[SCORE_COLUMN])
