"""One Label Studio server through its SDK: a project per stage, pushing tasks, closing decided ones,
and the users.

Every call that fails because of the server (down, token refused, project deleted) raises a UserError
or ServiceUnavailable with what to do; local state is written only after the server confirmed a change.
"""

from __future__ import annotations

import hashlib
import hmac
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
from knowref60k.labelling.controls import SHOWN_FIELDS
from knowref60k.labelling.decisions import RESOLUTION, SCREENING
from knowref60k.labelling.quality import is_control
from knowref60k.labelling.separation import ROLE_STAGES

from .labelstudio_app.labelstudio_contract import GRANTS_PATH, TASK_COLUMNS
from .records import Records
from .roster import load_accounts
from .settings import Settings, receiver_url, state_lock, webhook_secret
from .tasks import TASK_BUILDERS
from .webhooks import WebhookReview, WebhookSpec, review

log = logging.getLogger(__name__)
T = TypeVar("T")

HERE = Path(__file__).resolve().parent
# What the tasks of both stages are made of.
ITEM_COLUMNS = ["candidate_id", *dict.fromkeys((*SHOWN_FIELDS[SCREENING], *SHOWN_FIELDS[RESOLUTION]))]
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
# The length of a candidate's id (20 hex digits), which a control's disguised id takes too.
CANDIDATE_ID_LENGTH = 20
# The data manager shows every column a view does not hide, raw markup and other annotators' answers
# included; the annotators' view leaves the task id, the sentence as text, and how far each task has got.
DATA_KEYS = ("item_id", "sentence_html", "options", "answer_identity")
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
        self.records = Records(settings)
        self._own_id: int | None = None
        self._no_gate = False
        self._granted: set[int] = set()

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
        """The stage's project by the id recorded when the pipeline made it (None when it is gone: see
        `gone_projects`); before any is recorded, the project of that title the pipeline's own account made,
        which is then recorded with the tasks it holds (a project an earlier version made, or whose
        records were lost, is trusted as it is found). A project of the same title made by another
        account is never used."""
        title = self.title(stage)
        recorded = self.records.project(title)
        if recorded is not None:
            return self.call(self._unless_gone(self.sdk.projects.get), recorded)
        found = next((project for project in self._titled(title) if self._made_by_us(project)), None)
        if found is not None:
            self._adopt(int(found.id), stage, title)
        return found

    def _adopt(self, project: int, stage: str, title: str) -> None:
        known = self.records.tasks_of(project)
        # What Label Studio holds is all there is to adopt: the project predates the records.
        tasks: list[tuple[int, dict[str, Any], str, str | None]] = [
            (int(task["id"]), task["data"], str(task["data"]["item_id"]), None)
            for task in self.export(project)
        ]
        self.records.record_tasks(project, stage, [task for task in tasks if task[0] not in known])
        self.records.record_project(title, project)
        log.info("adopted project %s (%s) with the %d tasks it holds", project, title, len(tasks))

    def gone_projects(self, stage: str, found: bool) -> list[int]:
        """The stage's projects the pipeline made that Label Studio no longer has: those retired
        (`forget-project`), and the recorded one when `find_project` just `found` none (it reads the
        recorded id, so a None from it means that project is gone)."""
        recorded = None if found else self.records.project(self.title(stage))
        return [*self.records.retired(self.title(stage)), *([recorded] if recorded is not None else [])]

    def lookalikes(self, stage: str) -> list[int]:
        """Projects titled as the stage's that are not the pipeline's (made by another account)."""
        ours = self.records.project(self.title(stage))
        return sorted(int(p.id) for p in self._titled(self.title(stage)) if int(p.id) != ours)

    def _titled(self, title: str) -> list[Any]:
        projects: list[Any] = self.call(lambda: list(self.sdk.projects.list(title=title)))
        return [project for project in projects if project.title == title]

    def _made_by_us(self, project: Any) -> bool:
        if self._own_id is None:
            self._own_id = int(self.call(self.sdk.users.whoami).id)
        maker = project.created_by
        return maker is not None and int(maker.id or -1) == self._own_id

    def ensure_project(self, stage: str, initial_overlap: int) -> int:
        """The stage's project id, creating it if it does not exist, with the annotators' data-manager
        view and the webhook that settles each vote. `initial_overlap` (the annotators a task nobody has
        voted on admits) becomes its `maximum_annotations`, which Label Studio gives every imported task;
        it is never changed afterwards (Label Studio resets every task's overlap when it changes): tasks
        imported into an older project that admits more get their overlap set one by one."""
        project = self.find_project(stage)
        if project is None:
            self._refuse_vanished(stage)
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
            self.records.record_project(self.title(stage), int(project.id or 0))
        project_id = int(project.id or 0)
        self.grant_project(project_id, stage)
        if project.sampling != self.sampling:
            self.call(self.sdk.projects.update, project_id, sampling=self.sampling)
        if project.maximum_annotations != initial_overlap:
            self.overlap_at_import[project_id] = initial_overlap
        self.ensure_annotator_view(project_id)
        if project_id not in self.reviewed:
            self.review_webhooks([project_id])
        return project_id

    def _refuse_vanished(self, stage: str) -> None:
        """Called when `find_project` found none: a recorded project is then gone."""
        gone = self.records.project(self.title(stage))
        if gone is not None:
            raise UserError(
                f"the {stage} project the pipeline made at {self.settings.url} (id {gone}) is gone "
                f"(deleted in Label Studio?); the votes seen in it are kept in "
                f"{self.settings.state_dir / 'records'}; to start a new project: "
                f"knowref60k annotate forget-project {stage}"
            )

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
            self._refuse_vanished(stage)
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
        present = {task.item_id for task in self.records.tasks_of(project).values()}
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
        """The items as tasks of the stage, recorded with the data given them; returns how many were
        imported. Community's synchronous import answers with the new tasks' ids, in the order sent."""
        tasks = [self._disguised(_with_priority(TASK_BUILDERS[stage](item, seed), item)) for item in items]
        result = self.call(self.sdk.projects.import_tasks, project, request=tasks, return_task_ids=True)
        task_ids = [int(task_id) for task_id in getattr(result, "task_ids", None) or []]
        if len(task_ids) != len(tasks):
            raise UserError(
                f"Label Studio at {self.settings.url} imported {result.task_count} tasks into project "
                f"{project} but named {len(task_ids)} of {len(tasks)}: the pipeline cannot record them, "
                "their votes would be refused (only Community's synchronous import is supported)"
            )
        given = [
            (task_id, task["data"], str(item["candidate_id"]), item.get("sentence"))
            for task_id, task, item in zip(task_ids, tasks, items, strict=True)
        ]
        self.records.record_tasks(project, stage, given)
        log.info("imported %d tasks", result.task_count)
        overlap = self.overlap_at_import.get(project)
        for task_id in task_ids if overlap else []:
            self.call(self.sdk.tasks.update, str(task_id), overlap=overlap)
        return int(result.task_count or 0)

    def _disguised(self, task: dict[str, Any]) -> dict[str, Any]:
        """A control's task names its item by an id shaped like any other (a keyed hash no annotator can
        compute), so that nobody can tell it from a real item; the records keep which control it is."""
        item_id = str(task["data"]["item_id"])
        if is_control(item_id):
            disguise = self.keyed(item_id).hex()[:CANDIDATE_ID_LENGTH]
            task["data"] = {**task["data"], "item_id": disguise}
        return task

    def keyed(self, text: str) -> bytes:
        """A hash of `text` keyed by the receiver's webhook secret, which no annotator can read."""
        return hmac.new(webhook_secret(self.settings).encode(), text.encode(), hashlib.sha256).digest()

    def has_item(self, project: int, item_id: str) -> bool:
        """Whether the pipeline imported a task of the item into the project (by its records: a task's
        data in Label Studio can be changed by any account)."""
        return self.records.task_of_item(project, item_id) is not None

    # ---- closing ----

    def set_queue_state(self, task_id: int, overlap: int, closed: bool) -> None:
        """Closing takes a decided task out of every annotator's queue: its overlap down to the votes it
        has, and labelled (changing only the overlap leaves it in the data manager's next-task path).
        Reopening raises the overlap above them."""
        self.call(self.sdk.tasks.update, str(task_id), overlap=overlap, is_labeled=closed)

    # ---- the access gate of the Label Studio the pipeline runs (knowref60k_gate.py) ----

    def _gate(self, method: str, body: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The gate's answer; None from a Label Studio without it (one the pipeline does not run)."""
        if self._no_gate:
            return None
        try:
            answer = httpx.request(
                method,
                f"{self.api_url.rstrip('/')}{GRANTS_PATH}",
                json=body,
                headers={"Authorization": f"Token {self.settings.api_key}"},
                timeout=60,
            )
        except httpx.TransportError as error:
            raise ServiceUnavailable(f"Label Studio is not reachable at {self.api_url} ({error})") from None
        if answer.status_code == 404:
            log.info("no access gate at %s: its accounts are not confined to their stage", self.api_url)
            self._no_gate = True
            return None
        if answer.status_code != 200:
            raise UserError(
                f"the access gate at {self.api_url} answered {answer.status_code}: {answer.text[:200]}"
            )
        found: dict[str, Any] = answer.json()
        return found

    def invitation(self) -> str | None:
        """The gate's sign-up invitation code, which only the pipeline's account can read."""
        found = self._gate("GET")
        return None if found is None else str(found["invite"])

    def grant_accounts(self, accounts: Iterable[Any]) -> None:
        """Let each account open the pipeline's project of its role's stage (when there is one yet)."""
        granted = {}
        for account in accounts:
            project = self.records.project(self.title(ROLE_STAGES[account.role]))
            if project is not None:
                granted[str(account.user_id)] = [project]
        if granted:
            self._gate("POST", {"projects_of_user": granted})

    def grant_project(self, project: int, stage: str) -> None:
        """Let every account on record whose role is the stage's open the project."""
        if project in self._granted:
            return
        accounts = [a for a in load_accounts(self.settings) if ROLE_STAGES[a.role] == stage]
        if accounts:
            self._gate("POST", {"projects_of_user": {str(a.user_id): [project] for a in accounts}})
        self._granted.add(project)

    def set_paused(self, user_ids: Iterable[int], paused: bool) -> None:
        """Pause these accounts at the access gate (it grants a paused account nothing, whatever its
        grants), or resume them."""
        change = {str(user_id): paused for user_id in user_ids}
        if change:
            self._gate("POST", {"paused_users": change})

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
