"""What the pipeline assumes of Label Studio beyond its documented API and SDK, in one place: each
assumption named, with where it is used and the Label Studio version it was read from.

The pipeline's modules take these names from here. `check()` tests every assumption against an
installed Label Studio from inside that Label Studio's own environment, in seconds, with no server and
no database (`knowref60k labelstudio check`; `tests/test_labelstudio_contract.py`):

    .venv-labelstudio/bin/python -P annotation/labelstudio_app/labelstudio_contract.py

It imports only the standard library at the top, so that both sides can import it: the pipeline's
environment, and Label Studio's (`-P`: the modules beside it must not shadow Label Studio's apps).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

# The Label Studio release every assumption below was read from (requirements-labelstudio.lock pins it).
READ_FROM_VERSION = "1.23.2"
DISTRIBUTION = "label-studio"

# Its Django settings and WSGI application, which our own application wraps (knowref60k_labelstudio.py)
# and gunicorn serves (server.py).
SETTINGS_MODULE = "label_studio.core.settings.label_studio"
WSGI_MODULE = "label_studio.core.wsgi"
# Its apps are imported by their own names (`projects`, `tasks`) from the `label_studio` package folder,
# as `label-studio start` puts it on the path (server.py: gunicorn's --pythonpath).
APPS_BY_BARE_NAME = ("projects", "tasks", "users", "data_manager", "webhooks")
# The middleware that serves a slash-less API path by running the request again with a slash; our
# application appends the slash first (knowref60k_labelstudio.py). The frontend calls these slash-less.
SLASH_MIDDLEWARE = "core.middleware.CommonMiddlewareAppendSlashWithoutRedirect"
SLASHLESS_API_PATHS = ("/api/tasks/1", "/api/projects/1/next")
# Pages and endpoints the pipeline calls outside the SDK.
HEALTH_PATH = "/health"  # server.py: is it up
SIGN_UP_PATH = "/user/signup/"  # accounts.py: the only way to make a working annotator
LOGIN_PATH = "/user/login/"  # accounts.py, the browser test
NEXT_TASK_PATH = "/api/projects/{project}/next"  # simulate.py: the task an annotator is sent
TASK_ANNOTATIONS_PATH = "/api/tasks/{task}/annotations/"  # simulate.py: an annotator's answer
USER_TOKEN_PATH = "/api/current-user/token"  # simulate.py: a logged-in annotator's API token
# The sign-up form (accounts.py): posted as a browser does, with Django's CSRF cookie and field.
SIGN_UP_FORM = "users.forms.UserSignupForm"
SIGN_UP_FIELDS = ("email", "password")
CSRF_COOKIE = "csrftoken"
CSRF_FIELD = "csrfmiddlewaretoken"
# The Data Manager's task columns the annotators' view hides (client.py): a column id is `tasks:<column>`
# or `tasks:data.<key>`.
TASK_COLUMNS = (
    "inner_id annotators annotations_results annotations_ids cancelled_annotations total_predictions "
    "predictions_score predictions_model_versions predictions_results file_upload storage_filename "
    "created_at updated_at updated_by avg_lead_time draft_exists"
).split()
# The access gate (knowref60k_gate.py): a middleware appended to Label Studio's, after the one that must
# already have told who makes the request; the variables naming the pipeline's own account and the data
# folder; the gate's own endpoint (the admin's grants) and the sign-up invitation's query parameter; the
# models and fields it reads to tell whose a task, annotation or draft is.
GATE_MIDDLEWARE = "knowref60k_gate.AccessGate"
GATE_AFTER = "jwt_auth.middleware.JWTAuthenticationMiddleware"
OWNER_VARIABLE = "LABEL_STUDIO_USERNAME"
RECEIVER_VARIABLE = "KNOWREF60K_RECEIVER_URL"  # ours, not Label Studio's: where the gate lets webhooks go
DATA_DIR_VARIABLE = "LABEL_STUDIO_BASE_DATA_DIR"
GRANTS_PATH = "/knowref60k/access"
INVITE_PARAMETER = "knowref60k_invite"
GATE_FIELDS = {
    "tasks.models.Task": ("project_id",),
    "tasks.models.Annotation": ("project_id", "completed_by_id", "task_id"),
    "tasks.models.AnnotationDraft": ("task_id", "user_id"),
    "tasks.models.TaskLock": ("task_id", "user_id"),
    "rest_framework.authtoken.models.Token": ("key", "user_id"),
}
# The paths it scopes, as the API names them (each must still resolve).
GATED_PATHS = (
    "/api/projects/1/",
    "/api/projects/1/next/",
    "/api/tasks/1/",
    "/api/tasks/1/annotations/",
    "/api/annotations/1/",
    "/api/drafts/1/",
    "/api/users/1/",
    "/api/webhooks/",
    "/projects/1/settings/",
)
# Who wrote an annotation (votes.py): `completed_by` is whatever the writer posts, `updated_by` the account
# that made the request, set by the annotation API's create and update (each code below in its method).
ANNOTATION_WRITER = "updated_by"
WRITER_IS_THE_REQUESTER = {
    "AnnotationsListAPI.perform_create": "'updated_by': user",
    "AnnotationAPI.update": "updated_by=request.user",
}
# The environment variables server.py, database.py and migrated.py hand Label Studio: each must still be
# read by its settings or its command line (which read NAME, or LABEL_STUDIO_NAME for some).
ENVIRONMENT_VARIABLES = (
    "LABEL_STUDIO_BASE_DATA_DIR LABEL_STUDIO_DATABASE_NAME LABEL_STUDIO_USERNAME LABEL_STUDIO_PASSWORD "
    "LABEL_STUDIO_USER_TOKEN "
    "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN SSRF_PROTECTION_ENABLED USE_DEFAULT_BANNED_SUBNETS "
    "USER_ADDITIONAL_BANNED_SUBNETS COLLECT_ANALYTICS SENTRY_DSN FRONTEND_SENTRY_DSN LATEST_VERSION_CHECK "
    "DJANGO_DB POSTGRE_NAME POSTGRE_USER POSTGRE_PASSWORD POSTGRE_HOST POSTGRE_PORT"
).split()
READ_BY = ("core/settings/base.py", "core/settings/label_studio.py", "server.py")
# Its command line (server.py): `init` migrates and makes the admin login; gunicorn then serves.
INIT_COMMAND = ("init", "--no-browser")
# Every command applies the migrations first; `version` then only prints (migrated.py: the migrated
# database a new SQLite data folder starts from).
MIGRATE_COMMAND = ("version",)
# Its SQLite database, in the data folder (LABEL_STUDIO_BASE_DATA_DIR).
SQLITE_FILE = "label_studio.sqlite3"


@dataclass(frozen=True)
class Assumption:
    name: str
    check: Callable[[], str | None]  # None when it holds, else what moved


def installed_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def _django(data_dir: str) -> None:
    """Label Studio's settings and apps loaded with a throw-away data folder, offline, quietly (its
    settings print where its data lives; its apps log as they load)."""
    os.environ.update(
        LABEL_STUDIO_BASE_DATA_DIR=data_dir,
        DJANGO_DB="sqlite",
        DJANGO_SETTINGS_MODULE=SETTINGS_MODULE,
        LATEST_VERSION_CHECK="false",
        COLLECT_ANALYTICS="false",
        SENTRY_DSN="",
    )
    import label_studio

    package = str(Path(label_studio.__file__).parent)
    if package not in sys.path:
        sys.path.append(package)
    import django

    logging.disable(logging.CRITICAL)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        django.setup()


def _imports(module: str, attribute: str | None = None) -> str | None:
    try:
        loaded = importlib.import_module(module)
    except ImportError as error:
        return f"{module} does not import ({error})"
    if attribute and not hasattr(loaded, attribute):
        return f"{module} has no {attribute}"
    return None


def resolves(path: str) -> bool:
    """Whether Label Studio's URL table sends `path` to a view (its settings loaded)."""
    from django.urls import Resolver404, resolve

    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def resolves_only_with_slash(path: str) -> bool:
    return not resolves(path) and resolves(path + "/")


def _resolves(path: str, with_slash_only: bool = False) -> str | None:
    if with_slash_only:
        return None if resolves_only_with_slash(path) else f"{path} no longer resolves only with a slash"
    return None if resolves(path) else f"{path} resolves to no view"


def _middleware() -> str | None:
    from django.conf import settings

    return None if SLASH_MIDDLEWARE in settings.MIDDLEWARE else f"{SLASH_MIDDLEWARE} is not in MIDDLEWARE"


def _gate() -> str | None:
    """The gate's hooks: the middleware it follows, the fields it reads, the paths it scopes."""
    from django.conf import settings

    if GATE_AFTER not in settings.MIDDLEWARE:
        return f"{GATE_AFTER} is not in MIDDLEWARE"
    for model_path, fields in GATE_FIELDS.items():
        module, name = model_path.rsplit(".", 1)
        model = getattr(importlib.import_module(module), name, None)
        names = {field.attname for field in model._meta.concrete_fields} if model is not None else set()
        missing = [field for field in fields if field not in names]
        if model is None or missing:
            return f"{model_path} has no {', '.join(missing or fields)}"
    return next((f"{path} is not served" for path in GATED_PATHS if not resolves(path)), None)


def _sign_up_form() -> str | None:
    from django.conf import settings

    module, name = SIGN_UP_FORM.rsplit(".", 1)
    form = getattr(importlib.import_module(module), name, None)
    if form is None:
        return f"{SIGN_UP_FORM} is gone"
    missing = [field for field in SIGN_UP_FIELDS if field not in form.base_fields]
    if missing:
        return f"{SIGN_UP_FORM} has no field {', '.join(missing)}"
    return (
        None
        if settings.CSRF_COOKIE_NAME == CSRF_COOKIE
        else f"the CSRF cookie is {settings.CSRF_COOKIE_NAME}"
    )


def _columns() -> str | None:
    from data_manager.functions import get_all_columns

    project = SimpleNamespace(
        id=0,
        data_types={"sentence_html": "HyperText"},
        summary=SimpleNamespace(all_data_columns={"item_id": 1}),
        all_members=SimpleNamespace(values_list=lambda *args, **kwargs: []),
        get_model_versions=lambda *args, **kwargs: [],
    )
    ids = {column["id"] for column in get_all_columns(project)["columns"]}
    missing = sorted(set(TASK_COLUMNS) - ids)
    return f"the Data Manager has no column {', '.join(missing)}" if missing else None


def _writer() -> str | None:
    import inspect

    from tasks import api

    for method, code in WRITER_IS_THE_REQUESTER.items():
        view, name = method.split(".")
        if code not in inspect.getsource(getattr(getattr(api, view), name)):
            return f"{method} no longer sets {ANNOTATION_WRITER} to the requester ({code})"
    return None


def _environment() -> str | None:
    import label_studio

    package = Path(label_studio.__file__).parent
    sources = "".join((package / name).read_text(encoding="utf-8") for name in READ_BY)
    unread = [
        name
        for name in ENVIRONMENT_VARIABLES
        if not any(f"{quote}{spelling}{quote}" in sources for quote in "'\"" for spelling in _spellings(name))
    ]
    return f"no longer read: {', '.join(unread)}" if unread else None


def _spellings(name: str) -> tuple[str, str]:
    return name, name.removeprefix("LABEL_STUDIO_")


def _commands() -> str | None:
    from core.argparser import parse_input_args

    for command in (INIT_COMMAND, MIGRATE_COMMAND):
        try:
            parse_input_args(list(command))
        except SystemExit:
            return f"`label-studio {' '.join(command)}` is refused"
    return None


def _migrations_first() -> str | None:
    """`label-studio` applies the migrations before it looks at its command."""
    import inspect

    from label_studio import server

    source = inspect.getsource(server.main)
    migrate, command = source.find("_apply_database_migrations()"), source.find("input_args.command ==")
    return None if 0 <= migrate < command else "the migrations no longer run before every command"


def _sqlite_file() -> str | None:
    from django.conf import settings

    found = Path(settings.DATABASES["default"]["NAME"])
    expected = Path(os.environ["LABEL_STUDIO_BASE_DATA_DIR"]) / SQLITE_FILE
    return None if found == expected else f"its SQLite database is {found}, not {expected}"


ASSUMPTIONS = (
    Assumption("settings module", lambda: _imports(SETTINGS_MODULE)),
    Assumption("WSGI module", lambda: _imports(WSGI_MODULE, "application")),
    Assumption("apps by bare name", lambda: next(filter(None, map(_imports, APPS_BY_BARE_NAME)), None)),
    Assumption("slash middleware", _middleware),
    Assumption(
        "slash-less API paths",
        lambda: next(filter(None, (_resolves(p, True) for p in SLASHLESS_API_PATHS)), None),
    ),
    Assumption("pages and endpoints", lambda: next(filter(None, map(_resolves, _paths())), None)),
    Assumption("sign-up form", _sign_up_form),
    Assumption("Data Manager columns", _columns),
    Assumption("annotation writer", _writer),
    Assumption("access gate", _gate),
    Assumption("environment variables", _environment),
    Assumption("command line", _commands),
    Assumption("migrations before every command", _migrations_first),
    Assumption("SQLite database file", _sqlite_file),
)


def _paths() -> tuple[str, ...]:
    return (
        HEALTH_PATH + "/",
        SIGN_UP_PATH,
        LOGIN_PATH,
        NEXT_TASK_PATH.format(project=1) + "/",
        TASK_ANNOTATIONS_PATH.format(task=1),
        USER_TOKEN_PATH,
    )


def check() -> list[str]:
    """What moved: one line per assumption that no longer holds, naming it (empty: all hold)."""
    data_dir = tempfile.mkdtemp(prefix="labelstudio-contract-")
    try:
        _django(data_dir)
    except Exception as error:  # whatever stops Label Studio's settings from loading
        shutil.rmtree(data_dir, ignore_errors=True)
        return [f"settings module: Label Studio's settings do not load ({type(error).__name__}: {error})"]
    broken = []
    for assumption in ASSUMPTIONS:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                problem = assumption.check()
        except Exception as error:  # an assumption whose code moved fails, naming the assumption
            problem = f"{type(error).__name__}: {error}"
        if problem:
            broken.append(f"{assumption.name}: {problem}")
    shutil.rmtree(data_dir, ignore_errors=True)
    return broken


def main() -> int:
    version = installed_version()
    broken = check()
    against = f"Label Studio {version} (assumptions read from {READ_FROM_VERSION})"
    for line in broken:
        print(f"moved: {line}", file=sys.stderr)
    if broken:
        print(
            f"error: {len(broken)} of {len(ASSUMPTIONS)} assumptions broken against {against}",
            file=sys.stderr,
        )
        return 1
    print(f"ok: all {len(ASSUMPTIONS)} assumptions hold against {against}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
