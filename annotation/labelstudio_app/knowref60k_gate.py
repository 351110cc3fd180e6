"""The access gate of the Label Studio the pipeline runs: a Django middleware after Label Studio's own
(knowref60k_labelstudio.py adds it), so that an annotator account can do what its stage needs and nothing
else. Label Studio Community has no roles: every account of the organization can, through its API, vote in
other people's names, change or delete their votes, edit tasks, make or delete projects and webhooks.

The pipeline's own account (the admin, `LABEL_STUDIO_USERNAME`) may do anything. Every other account:
- sees and opens only the projects the pipeline granted it (its role's stage's: `GRANTS_PATH`, below);
  the project list answers with those only;
- creates annotations only on those projects' tasks and only as itself, changes or deletes only its own
  (never re-assigning one), and writes its own drafts;
- writes nothing else through the API: no task, project, view, webhook, storage, member or setting (it may
  still read its own profile and token, and change its own profile);
- cannot read webhooks (they hold the receiver's secret), exports or imports.
Sign-up needs the pipeline's invitation code (`INVITE_PARAMETER`), which only the admin can read.

Grants and the invitation code live in `knowref60k-access.json` in Label Studio's data folder, written by
the admin through `GRANTS_PATH`: {"projects_of_user": {user id: [project id, ...]}}, each change added to
what is there; {"paused_users": {user id: true | false}} pauses or resumes an account: a paused one is
granted nothing, whatever its grants say, until it is resumed.
It imports only the standard library at the top and Label Studio's modules once Django runs.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import logging
import os
import re
import secrets
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from labelstudio_contract import (
    DATA_DIR_VARIABLE,
    GRANTS_PATH,
    INVITE_PARAMETER,
    OWNER_VARIABLE,
    RECEIVER_VARIABLE,
    SIGN_UP_PATH,
)

log = logging.getLogger("knowref60k.gate")
SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
NUMBER = r"(\d+)"
PROJECT_PATH = re.compile(rf"^/(?:api/)?projects/{NUMBER}(/.*)?$")
TASK_PATH = re.compile(rf"^/api/tasks/{NUMBER}(/.*)?$")
ANNOTATION_PATH = re.compile(rf"^/api/annotations/{NUMBER}(/.*)?$")
DRAFT_PATH = re.compile(rf"^/api/drafts/{NUMBER}/?$")
OWN_USER_PATH = re.compile(rf"^/api/users/{NUMBER}/?$")
# Read by no annotator: they hold the receiver's secret, every vote, or the server's configuration.
NEVER_READ = re.compile(r"^/api/(webhooks|invite|storages|import|export|organizations/\d+/memberships)")
# The Data Manager's one action that changes nothing: the labelling stream's next task.
READ_ACTIONS = ("next_task",)
# A project's pages and reads an annotator of it may not have.
PROJECT_NEVER_READ = re.compile(r"^/(export|exports|imports|reimports|settings|import|annotators)")
# Writes an annotator makes as itself (each checked further below).
OWN_WRITES = re.compile(r"^/(api/current-user/|user/(login|logout|account))")
WEBHOOKS = re.compile(r"^/api/webhooks(/|$)")
# The lists of projects, answered with the annotator's own only.
PROJECT_LISTS = ("/api/projects", "/api/projects/counts")


class Grants:
    """The grants file, read again whenever it changed (every worker process reads the same file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: tuple[float, int] | None = None
        self.data: dict[str, Any] = {"projects_of_user": {}, "invite": ""}

    def current(self) -> dict[str, Any]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return self.data
        if self._seen != (stat.st_mtime, stat.st_size):
            self.data = {**self.data, **json.loads(self.path.read_text(encoding="utf-8"))}
            self._seen = (stat.st_mtime, stat.st_size)
        return self.data

    def update(self, change: dict[str, Any]) -> dict[str, Any]:
        """Merge a change (admin only), under a lock across worker processes; the invitation made once."""
        with (self.path.parent / (self.path.name + ".lock")).open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = dict(self.current())
            data["invite"] = data.get("invite") or secrets.token_urlsafe(24)
            granted = {user: set(projects) for user, projects in data["projects_of_user"].items()}
            for user, projects in change.get("projects_of_user", {}).items():
                granted.setdefault(str(user), set()).update(int(project) for project in projects)
            paused = set(data.get("paused_users", []))
            for user, pausing in change.get("paused_users", {}).items():
                (paused.add if pausing else paused.discard)(str(user))
            data["paused_users"] = sorted(paused)
            data["projects_of_user"] = {user: sorted(projects) for user, projects in granted.items()}
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(data), encoding="utf-8")
            os.chmod(temporary, 0o600)
            temporary.replace(self.path)
            self._seen = None
            return self.current()


def _release_locks(users: list[str]) -> None:
    """Drop the task locks of paused accounts: a task served to one of them (and not yet voted on) holds
    a slot until its lock expires, which could be days."""
    if not users:
        return
    from django.db import DatabaseError
    from tasks.models import TaskLock

    try:
        TaskLock.objects.filter(user_id__in=[int(user) for user in users]).delete()
    except DatabaseError as error:  # SQLite busy: the next collect tells the gate again
        log.warning("task locks of paused accounts %s not released: %s", users, error)


def _refused(why: str, status: int = 403) -> Any:
    from django.http import JsonResponse

    return JsonResponse({"detail": f"refused by the knowref60k access gate: {why}"}, status=status)


def requester(request: Any) -> Any | None:
    """The account making the request: by session or JWT (Label Studio's middleware set it), else by the
    legacy API token (its keyword in any case, as Django REST framework reads it)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user
    keyword, _, key = request.META.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    if keyword.lower() == "token" and key.strip():
        from rest_framework.authtoken.models import Token

        found = Token.objects.filter(key=key.strip()).select_related("user").first()
        return found.user if found is not None else None
    return None


class AccessGate:
    """The middleware."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self.grants = Grants(Path(os.environ[DATA_DIR_VARIABLE]) / "knowref60k-access.json")
        self.owner_email = os.environ[OWNER_VARIABLE]
        self.receiver = os.environ.get(RECEIVER_VARIABLE, "")
        self._owner_id: int | None = None

    def is_owner(self, user: Any) -> bool:
        """Whether `user` is the pipeline's account: the one its exact email named first (an account
        may change its own email, never to one taken, but to another spelling of it)."""
        if self._owner_id is None:
            from django.contrib.auth import get_user_model

            found = get_user_model().objects.filter(email=self.owner_email).values_list("id", flat=True)
            self._owner_id = found.first()
        return self._owner_id is not None and user.id == self._owner_id

    def __call__(self, request: Any) -> Any:
        path = request.path_info
        if path.rstrip("/") == SIGN_UP_PATH.rstrip("/") and request.method not in SAFE:
            return self._sign_up(request)
        user = requester(request)
        if user is None:
            # Credentials the gate cannot tell the account of must not reach a view that could.
            if request.META.get("HTTP_AUTHORIZATION") or path == GRANTS_PATH:
                return _refused("unknown credentials", status=401)
            return self.get_response(request)
        if self.is_owner(user):
            if WEBHOOKS.match(path) and request.method not in SAFE and (why := self._webhook(request)):
                return _refused(why)
            if path != GRANTS_PATH:
                return self.get_response(request)
            # By token only: a page the admin has open in a browser must not be able to post grants.
            token = request.META.get("HTTP_AUTHORIZATION", "").startswith("Token ")
            return self._grants(request) if token else _refused("grants are changed by API token only")
        why = self.refusal(request, user)
        if why is not None:
            log.warning("refused %s %s of %s: %s", request.method, path, user.email, why)
            return _refused(why)
        response = self.get_response(request)
        if request.method == "GET" and path.rstrip("/") in PROJECT_LISTS:
            self._only_allowed_projects(response, user)
        return response

    def _webhook(self, request: Any) -> str | None:
        """Why a webhook may not be sent where this one points: Label Studio's SSRF guard lets the
        receiver's host through on any port; only the receiver's own address and port are the pipeline's."""
        body = _body(request)
        if body is None:
            return "webhooks are sent as JSON"
        target = body.get("url")
        if not isinstance(target, str) or not self.receiver or not _same_host(target, self.receiver):
            return None
        if _port(target) == _port(self.receiver):
            return None
        return "the receiver's host takes webhooks on the receiver's port only"

    def _sign_up(self, request: Any) -> Any:
        invite = self.grants.current().get("invite") or ""
        given = request.GET.get(INVITE_PARAMETER, "")
        if not invite or not hmac.compare_digest(given.encode(), invite.encode()):
            return _refused("sign-up is by the pipeline's invitation only")
        return self.get_response(request)

    def _grants(self, request: Any) -> Any:
        from django.http import JsonResponse

        if request.method == "POST":
            change = json.loads(request.body or b"{}")
            granted = self.grants.update(change)
            _release_locks([user for user, pausing in change.get("paused_users", {}).items() if pausing])
            return JsonResponse(granted)
        return JsonResponse(self.grants.update({}))

    def allowed(self, user: Any, project: Any) -> bool:
        grants = self.grants.current()
        if str(user.id) in grants.get("paused_users", ()):
            return False
        return project in grants["projects_of_user"].get(str(user.id), ())

    def refusal(self, request: Any, user: Any) -> str | None:
        """Why the annotator `user` may not make this request; None when it may."""
        path, method = request.path_info, request.method
        if NEVER_READ.match(path) or path == GRANTS_PATH:
            return "not for annotators"
        for pattern, check in (
            (PROJECT_PATH, self._project),
            (TASK_PATH, self._task),
            (ANNOTATION_PATH, self._annotation),
            (DRAFT_PATH, self._draft),
            (OWN_USER_PATH, self._user),
        ):
            found = pattern.match(path)
            if found:
                return check(request, user, int(found.group(1)), found.groups()[-1] or "/")
        project = request.GET.get("project") or request.GET.get("project_id")
        if project is not None and not (project.isdigit() and self.allowed(user, int(project))):
            return "not a project of your stage"
        if project is None and (path.startswith("/api/dm/") or path.rstrip("/") == "/api/tasks"):
            return "tasks are listed by project"
        if method in SAFE or OWN_WRITES.match(path):
            return None
        if path.rstrip("/") == "/api/dm/actions" and request.GET.get("id") in READ_ACTIONS:
            return None
        return "annotators write only their own votes"

    def _project(self, request: Any, user: Any, project: int, rest: str) -> str | None:
        if not self.allowed(user, project):
            return "not a project of your stage"
        if PROJECT_NEVER_READ.match(rest):
            return "not for annotators"
        return None if request.method in SAFE else "annotators do not change projects"

    def _task(self, request: Any, user: Any, task: int, rest: str) -> str | None:
        from tasks.models import Task

        project = Task.objects.filter(id=task).values_list("project_id", flat=True).first()
        if not self.allowed(user, project):
            return "not a task of your stage"
        if request.method in SAFE:
            return None
        if rest.rstrip("/") == "/annotations" and request.method == "POST":
            return _names_another(request, user, task, project)
        if rest.rstrip("/") == "/drafts" and request.method == "POST":
            return None
        return "annotators do not change tasks"

    def _annotation(self, request: Any, user: Any, annotation: int, rest: str) -> str | None:
        from tasks.models import Annotation

        found = (
            Annotation.objects.filter(id=annotation)
            .values_list("project_id", "completed_by_id", "task_id")
            .first()
        )
        if found is None or not self.allowed(user, found[0]):
            return "not an annotation of your stage"
        if request.method in SAFE:
            return None
        if found[1] != user.id:
            return "annotators change only their own votes"
        return _names_another(request, user, found[2], found[0])

    def _draft(self, request: Any, user: Any, draft: int, rest: str) -> str | None:
        from tasks.models import AnnotationDraft

        found = AnnotationDraft.objects.filter(id=draft).values_list("task__project_id", "user_id").first()
        if found is None or not self.allowed(user, found[0]):
            return "not a draft of your stage"
        return (
            None
            if request.method in SAFE or found[1] == user.id
            else "annotators change only their own drafts"
        )

    def _user(self, request: Any, user: Any, other: int, rest: str) -> str | None:
        if request.method in SAFE:
            return None
        if other != user.id:
            return "annotators change only their own profile"
        # Its email is how the pipeline's records know the account.
        body = _body(request)
        return "an annotator's email is not changed" if body is None or "email" in body else None

    def _only_allowed_projects(self, response: Any, user: Any) -> None:
        """The project list as an annotator may see it: its stage's projects only."""
        if response.status_code != 200:
            return
        body = json.loads(response.content)
        listed = body.get("results") if isinstance(body, dict) else body
        kept = [project for project in listed or [] if self.allowed(user, project.get("id"))]
        body = {**body, "results": kept, "count": len(kept), "next": None} if isinstance(body, dict) else kept
        response.content = json.dumps(body).encode()
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))


def _body(request: Any) -> dict[str, Any] | None:
    """The request's JSON object; None when it sends anything else (a form would be read by Label Studio
    too, and the gate does not read forms)."""
    if not request.body:
        return {}
    if request.content_type != "application/json":
        return None
    try:
        body = json.loads(request.body)
    except ValueError:
        return {}  # Label Studio refuses it itself
    return body if isinstance(body, dict) else {}


def _names_another(request: Any, user: Any, task: int, project: int) -> str | None:
    """Why an annotation written in this request would not be the writer's own vote on its task: it
    names another author or writer, or moves it to another task or project."""
    body = _body(request)
    if body is None:
        return "votes are sent as JSON"
    named = body.get("completed_by")
    named = named.get("id") if isinstance(named, dict) else named
    if (named is not None and named != user.id) or "updated_by" in body:
        return "a vote is cast only in its writer's own name"
    moved = {key: str(body[key]) for key in ("task", "project") if key in body}
    if moved and moved != {
        key: str(value) for key, value in (("task", task), ("project", project)) if key in moved
    }:
        return "a vote stays on its task"
    return None


def _addresses(url: str) -> set[str]:
    host = urlsplit(url).hostname or ""
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        return set()


def _same_host(url: str, receiver: str) -> bool:
    return bool(_addresses(url) & _addresses(receiver))


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    try:
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
