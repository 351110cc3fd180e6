"""Errors caused by the user's input or environment: reported as one clear line, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix: a missing file, a wrong format, no spaCy model, a server not running."""
