"""Errors caused by the user's input or environment: reported as one clear line, never a traceback.

Their kind decides what a Prefect task does with them: a `UserError` fails at once (a missing file does
not appear by retrying), a `ServiceUnavailable` is retried (a server restarting comes back).
"""


class UserError(Exception):
    """A mistake the user can fix: a missing file, a wrong format, no spaCy model, a server not running."""


class ServiceUnavailable(UserError):
    """A server that could not be reached or answered with a server error: worth another try."""
