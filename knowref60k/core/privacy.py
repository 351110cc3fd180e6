"""Reddit usernames written in text: `u/name` and `/u/name`, the forms Reddit turns into a link to the
account, and links to an account's page (`reddit.com/user/name`). A sentence that holds one is not a
candidate (extract's mention filter); a quarantined line keeps its text with each one masked."""

from __future__ import annotations

import re

# "u/" or "/u/" not inside a word or a path, then what Reddit allows in a name (3-20 of these characters;
# any length is taken, so a longer run is not let through half-masked).
USER_MENTION = re.compile(r"(?<![\w/])/?[uU]/[A-Za-z0-9_-]{3,}|(?i:reddit\.com/u(?:ser)?/)[A-Za-z0-9_-]+")
MASKED_MENTION = "u/<redacted>"


def names_a_user(text: str) -> bool:
    return USER_MENTION.search(text) is not None


def mask_user_mentions(text: str) -> str:
    return USER_MENTION.sub(MASKED_MENTION, text)
