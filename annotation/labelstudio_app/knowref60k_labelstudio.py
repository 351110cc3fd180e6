"""Label Studio's web application, with the pipeline's access gate (knowref60k_gate.py), its database
connections kept open between requests and its API's slash-less paths routed without a detour.

Served by gunicorn in Label Studio's own environment (server.py): it imports nothing of ours but the
contract beside it.
Django opens a new connection for every request by default; on PostgreSQL each one forks a server
process, authenticates with SCRAM and fills that process's catalogue caches again, on the same cores
that serve the requests. Label Studio reads no setting for it, so it is set here, before Django opens
any connection (a settings module of our own cannot star-import Label Studio's: that module reads its
own settings while it is imported).
"""

import functools
import importlib
import os
from collections.abc import Callable, Iterable
from typing import Any

# Beside this module on gunicorn's path (server.py): Label Studio's module names, in one place.
from labelstudio_contract import GATE_MIDDLEWARE, SETTINGS_MODULE, WSGI_MODULE
from labelstudio_contract import resolves_only_with_slash as needs_a_slash

os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS_MODULE)

from django.conf import settings

# Checked and set by knowref60k_annotation.server, which starts this application.
settings.DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ["KNOWREF60K_DB_CONN_MAX_AGE"])
# A connection the database closed (a restart) is replaced at the next request instead of failing it.
settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# After Label Studio's own middleware, which tells who makes the request (knowref60k_gate.py).
settings.MIDDLEWARE = [*settings.MIDDLEWARE, GATE_MIDDLEWARE]

label_studio_application = importlib.import_module(WSGI_MODULE).application

__all__ = ["application", "resolves_only_with_slash"]


@functools.lru_cache(maxsize=8192)
def resolves_only_with_slash(path: str) -> bool:
    """Whether Label Studio would serve `path` only after appending a slash.

    Its labelling frontend calls the API without trailing slashes (`/api/tasks/N`, the next task). For
    those Label Studio runs the request through its middleware to a 404, then again from the start on
    the path with a slash (`core.middleware.CommonMiddlewareAppendSlashWithoutRedirect`). Appending the
    slash before Django sees the request reaches the same view once.
    """
    return bool(needs_a_slash(path))


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    path = environ.get("PATH_INFO", "")
    if path.startswith("/api/") and not path.endswith("/") and resolves_only_with_slash(path):
        environ["PATH_INFO"] = path + "/"
    served: Iterable[bytes] = label_studio_application(environ, start_response)
    return served
