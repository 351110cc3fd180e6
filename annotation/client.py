"""Push items to Label Studio, create annotator accounts, collect votes, simulate annotators.

Every call that fails because of the server (down, token refused, project deleted) raises a UserError
with what to do; local state is written only after the server confirmed the change.
"""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError

from annotation.settings import Settings, write_private
from annotation.tasks import IDENTITIES, task_for
from annotation.votes import VOTE_SCHEMA, votes_from_export
from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.core.io import atomic_path, read_rows, write_json_atomic

log = logging.getLogger(__name__)
T = TypeVar("T")

HERE = Path(__file__).resolve().parent
LABEL_CONFIG = (HERE / "labeling_config.xml").read_text(encoding="utf-8")
GUIDELINES = (HERE / "guidelines.html").read_text(encoding="utf-8")
ANNOTATIONS_PER_TASK = 5
SIMULATED_PREFIX = "simulated-annotator-"
ITEM_COLUMNS = [
    "candidate_id",
    "source_file",
    "perturbed_sentence",
    "name1",
    "name2",
    "perturbed_pronoun_start",
    "perturbed_pronoun_end",
]
ANNOTATOR_VIEW = "Tasks"
# The data manager shows every column a view does not hide, raw markup and other annotators' answers
# included; the annotators' view leaves the task id, the sentence as text, and how far each task has got.
TASK_COLUMNS = (
    "inner_id annotators annotations_results annotations_ids cancelled_annotations total_predictions "
    "predictions_score predictions_model_versions predictions_results file_upload storage_filename "
    "created_at updated_at updated_by avg_lead_time draft_exists allow_skip"
).split()
DATA_KEYS = ("item_id", "sentence_html", "options", "answer_identity", "source_file")
HIDDEN_COLUMNS = sorted(
    {f"tasks:{column}" for column in TASK_COLUMNS} | {f"tasks:data.{key}" for key in DATA_KEYS}
)


@dataclass(frozen=True)
class Account:
    email: str
    password: str
    user_id: int


@dataclass(frozen=True)
class PushReport:
    items: int
    already_there: int
    pushed: int
    tasks_in_project: int


class LabelStudioClient:
    """One project in one Label Studio server, addressed with the admin's API token."""

    def __init__(self, settings: Settings, timeout: float = 120.0) -> None:
        self.settings = settings
        self.sdk = LabelStudio(base_url=settings.url, api_key=settings.api_key, timeout=timeout)  # type: ignore[no-untyped-call]

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
                f"Label Studio is not reachable at {self.settings.url} ({error}); "
                "start it with `make labelstudio`"
            ) from None
        except ApiError as error:
            if error.status_code == 401:
                raise UserError(
                    f"Label Studio at {self.settings.url} refused the API token (401); "
                    "check LABEL_STUDIO_API_KEY in .env"
                ) from None
            kind = ServiceUnavailable if (error.status_code or 0) >= 500 else UserError
            raise kind(f"Label Studio request failed: {error.status_code} {str(error.body)[:300]}") from None

    # ---- the project ----

    def find_project(self) -> int | None:
        projects: list[Any] = self.call(lambda: list(self.sdk.projects.list(title=self.settings.project)))
        for project in projects:
            if project.title == self.settings.project:
                return int(project.id)
        return None

    def ensure_project(self) -> int:
        """The project's id, creating it (5 distinct annotators per task) if it does not exist, with the
        annotators' data-manager view."""
        project = self.find_project()
        if project is None:
            created = self.call(
                self.sdk.projects.create,
                title=self.settings.project,
                description="Who does the highlighted pronoun refer to? (knowref60k)",
                label_config=LABEL_CONFIG,
                expert_instruction=GUIDELINES,
                show_instruction=True,
                show_skip_button=True,
                maximum_annotations=ANNOTATIONS_PER_TASK,
            )
            log.info("created project %s (%s)", created.id, self.settings.project)
            project = int(created.id or 0)
        self.ensure_annotator_view(project)
        return project

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

    def existing_project(self) -> int:
        found = self.find_project()
        if found is None:
            raise UserError(
                f"project {self.settings.project!r} not found at {self.settings.url} (deleted?); "
                "push items first: knowref60k annotate push ITEMS..."
            )
        return found

    def export(self, project: int) -> list[dict[str, Any]]:
        """Every task of the project with its data and annotations."""
        tasks: list[dict[str, Any]] = self.call(self.sdk.projects.exports.as_json, project, timeout=600)
        return tasks

    # ---- pushing ----

    def push(self, items: Iterable[dict[str, Any]], seed: int, batch_size: int = 1000) -> PushReport:
        """Import items not yet in the project, in batches. The server is the record of what is there,
        so a push that was interrupted (or repeated) imports only what is missing."""
        project = self.ensure_project()
        present = {task["data"]["item_id"] for task in self.export(project)}
        total = pushed = 0
        batch: list[dict[str, Any]] = []
        for item in items:
            total += 1
            if item["candidate_id"] in present:
                continue
            present.add(item["candidate_id"])
            batch.append(task_for(item, seed))
            if len(batch) >= batch_size:
                pushed += self._import(project, batch)
                batch = []
        if batch:
            pushed += self._import(project, batch)
        return PushReport(total, total - pushed, pushed, len(present))

    def _import(self, project: int, tasks: list[dict[str, Any]]) -> int:
        result = self.call(self.sdk.projects.import_tasks, project, request=tasks, return_task_ids=True)
        log.info("imported %d tasks", result.task_count)
        return int(result.task_count or 0)

    # ---- people ----

    def users(self) -> list[dict[str, Any]]:
        return [{"id": int(user.id), "email": user.email} for user in self.call(self.sdk.users.list)]

    def sign_up(self, email: str, password: str) -> Account:
        """Create a working annotator the way a person would (the API's users.create leaves the user
        outside the organization and ignores the password: docs/decisions.md, section 2)."""
        with httpx.Client(base_url=self.settings.url, timeout=60, follow_redirects=False) as session:
            try:
                session.get("/user/signup/")
                response = session.post(
                    "/user/signup/",
                    data={
                        "email": email,
                        "password": password,
                        "csrfmiddlewaretoken": session.cookies["csrftoken"],
                    },
                    headers={"Referer": f"{self.settings.url}/user/signup/"},
                )
            except httpx.TransportError as error:
                raise ServiceUnavailable(
                    f"Label Studio is not reachable at {self.settings.url} ({error})"
                ) from None
        if response.status_code != 302:
            raise UserError(
                f"signing up {email} failed: {response.status_code} (does the user exist already?)"
            )
        user = next(u for u in self.users() if u["email"] == email)
        return Account(email, password, int(user["id"]))

    def create_annotators(self, count: int, prefix: str = "annotator-") -> list[Account]:
        """`count` new accounts that can log in and label; existing ones with the prefix are kept."""
        taken = {user["email"] for user in self.users()}
        accounts: list[Account] = []
        number = 1
        while len(accounts) < count:
            email = f"{prefix}{number}@knowref60k.local"
            number += 1
            if email not in taken:
                accounts.append(self.sign_up(email, secrets.token_urlsafe(12)))
        return accounts

    # ---- collecting ----

    def collect(self, out_dir: Path) -> tuple[Path, dict[str, Any]]:
        """Write every vote to OUT/votes.parquet; report what changed since the last collect."""
        project = self.existing_project()
        simulated = frozenset(u["id"] for u in self.users() if u["email"].startswith(SIMULATED_PREFIX))
        votes, counts = votes_from_export(self.export(project), simulated)
        votes_path = out_dir / "votes.parquet"
        changes = _changes(votes_path, votes)
        table = pa.Table.from_pylist(votes, schema=VOTE_SCHEMA)
        with atomic_path(votes_path) as temporary:
            pq.write_table(table, temporary, compression="zstd")
        report = {
            "project": project,
            **counts.to_dict(),
            **changes,
            "simulated_votes": sum(v["simulated"] for v in votes),
        }
        write_json_atomic(out_dir / "collect.json", report)
        return votes_path, report

    # ---- simulated annotators (demos and tests) ----

    def simulate(self, annotators: int, accuracy: float, seed: int, truth: Callable[[str], str]) -> int:
        """Post one annotation per simulated annotator on every task that still needs one, through
        the API, as those users. `truth(item_id)` is the answer a perfect annotator gives; with
        probability 1 - accuracy a seeded annotator picks one of the other answers instead."""
        project = self.existing_project()
        accounts = self._simulated_accounts(annotators)
        posted = 0
        for task in self.export(project):
            done = {_annotator(a) for a in task.get("annotations") or []}
            for account in accounts:
                if account.user_id in done:
                    continue
                choice = _simulated_choice(task["data"]["item_id"], account.user_id, accuracy, seed, truth)
                label = next(k for k, v in task["data"]["answer_identity"].items() if v == choice)
                self.post_vote(task["id"], account.user_id, label)
                posted += 1
        return posted

    def _simulated_accounts(self, count: int) -> list[Account]:
        existing = sorted(
            (u for u in self.users() if u["email"].startswith(SIMULATED_PREFIX)), key=lambda u: u["email"]
        )
        accounts = [Account(u["email"], "", int(u["id"])) for u in existing[:count]]
        if len(accounts) < count:
            accounts += self.create_annotators(count - len(accounts), SIMULATED_PREFIX)
        return accounts

    def post_vote(self, task_id: int, user_id: int, label: str, lead_time: float = 5.0) -> None:
        result = [
            {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
        ]
        self.call(
            self.sdk.annotations.create, id=task_id, result=result, completed_by=user_id, lead_time=lead_time
        )


def _annotator(annotation: dict[str, Any]) -> int:
    completed_by = annotation["completed_by"]
    return int(completed_by["id"] if isinstance(completed_by, dict) else completed_by)


def _simulated_choice(
    item_id: str, user_id: int, accuracy: float, seed: int, truth: Callable[[str], str]
) -> str:
    digest = hashlib.sha256(f"{seed}\x1f{item_id}\x1f{user_id}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    right = truth(item_id)
    if rng.random() < accuracy:
        return right
    return rng.choice([identity for identity in IDENTITIES if identity != right])


def _changes(votes_path: Path, votes: list[dict[str, Any]]) -> dict[str, int]:
    """How the new votes differ from the last collect: new, updated, unchanged, withdrawn."""
    before: dict[tuple[str, int], tuple[int, Any]] = {}
    if votes_path.exists():
        for row in pq.read_table(
            votes_path, columns=["item_id", "annotator_id", "annotation_id", "updated_at"]
        ).to_pylist():
            before[(row["item_id"], row["annotator_id"])] = (row["annotation_id"], row["updated_at"])
    now = {(v["item_id"], v["annotator_id"]): (v["annotation_id"], v["updated_at"]) for v in votes}
    return {
        "new_votes": sum(1 for key in now if key not in before),
        "updated_votes": sum(1 for key, value in now.items() if key in before and before[key] != value),
        "unchanged_votes": sum(1 for key, value in now.items() if before.get(key) == value),
        "withdrawn_votes": sum(1 for key in before if key not in now),
    }


def read_items(paths: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        yield from read_rows(path, ITEM_COLUMNS, "items")


def save_accounts(path: Path, accounts: list[Account]) -> None:
    """Append new logins to a git-ignored file readable only by its owner."""
    known = orjson.loads(path.read_bytes()) if path.exists() else []
    known += [{"email": a.email, "password": a.password, "user_id": a.user_id} for a in accounts]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, orjson.dumps(known, option=orjson.OPT_INDENT_2))
