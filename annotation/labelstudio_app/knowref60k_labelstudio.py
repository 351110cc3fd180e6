"""Label Studio's web application, with its database connections kept open between requests.

Served by gunicorn in Label Studio's own environment (annotation.server): it imports nothing of ours.
Django opens a new connection for every request by default; on PostgreSQL each one forks a server
process, authenticates with SCRAM and fills that process's catalogue caches again, on the same cores
that serve the requests. Label Studio reads no setting for it, so it is set here, before Django opens
any connection (a settings module of our own cannot star-import Label Studio's: that module reads its
own settings while it is imported).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "label_studio.core.settings.label_studio")

from django.conf import settings

# Checked and set by annotation.server, which starts this application.
settings.DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ["KNOWREF60K_DB_CONN_MAX_AGE"])
# A connection the database closed (a restart) is replaced at the next request instead of failing it.
settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

from label_studio.core.wsgi import application  # noqa: E402 (after the settings above)

__all__ = ["application"]
