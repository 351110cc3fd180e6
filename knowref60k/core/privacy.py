"""Reddit usernames written in text: `u/name` and `/u/name`, the forms Reddit turns into a link to the
account, `/user/name`, links to an account's page (`reddit.com/user/name`), and the spellings that show
the same to a reader: a space before the slash, a Markdown-escaped slash, a slash look-alike (U+2044,
U+2215, U+29F8, U+FF0F). A sentence that holds one is not a candidate (extract's mention filter); a
quarantined line keeps its text with each one masked."""

from __future__ import annotations

import re
from typing import Any

# A name: what Reddit allows in one (3-20 of these characters; any length is taken, so a longer run is
# not let through half-masked), an underscore possibly escaped for Markdown.
_NAME = r"(?:[A-Za-z0-9_-]|\\_)"
_SLASH = r"\\?[/\u2044\u2215\u29f8\uff0f]"
# "u/" or "/u/" or "/user/" not inside a word or a path; a profile's subreddit ("r/u_name"); a link to a
# profile.
USER_MENTION = re.compile(
    rf"(?<![\w/\\])(?:(?:{_SLASH})?[uU]|{_SLASH}(?i:user)) ?{_SLASH}{_NAME}{{3,}}"
    rf"|(?<!\w)(?:{_SLASH})?[rR]{_SLASH}u_{_NAME}+"
    rf"|(?i:reddit\.com{_SLASH}u(?:ser)?{_SLASH}){_NAME}+"
)
MASKED_MENTION = "u/<redacted>"
# The subreddit of a comment posted on a user's profile is named after the user.
PROFILE_SUBREDDIT = re.compile(r"u_.+", re.S)
MASKED_PROFILE = "u_<redacted>"


def names_a_user(text: str) -> bool:
    return USER_MENTION.search(text) is not None


def mask_user_mentions(text: str) -> str:
    return USER_MENTION.sub(MASKED_MENTION, text)


def mask_profile_subreddit(subreddit: str) -> str:
    return MASKED_PROFILE if PROFILE_SUBREDDIT.fullmatch(subreddit) else subreddit


def masked_field(key: Any, text: str) -> str:
    """A field's text with every name masked; the `subreddit` field's profile name too."""
    masked = mask_user_mentions(text)
    return mask_profile_subreddit(masked) if key == "subreddit" else masked


def masked_texts(value: Any) -> Any:
    """`value` (a row: nested dicts, lists and scalars) with every name masked in each of its strings."""
    if isinstance(value, str):
        return mask_user_mentions(value)
    if isinstance(value, dict):
        return {key: masked_texts(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [masked_texts(item) for item in value]
    return value
