"""Usernames written in a sentence (`u/name`, `/u/name`): the candidate goes to no one."""

from __future__ import annotations

import pytest

from knowref60k.core.privacy import mask_user_mentions, names_a_user
from knowref60k.prepare.stages.mentions import UserMention


@pytest.mark.parametrize(
    "text",
    [
        "Roderick is painting Madeline for u/secretuserx, but she is tired.",
        "Ask /u/Some_User about it.",
        "Thanks (U/abc-def) for that.",
        "It was u/abc.",
        "Her profile r/u_alice says so.",
        "Ask u/some\\_name then.",
        "Ask /user/some_name then.",
        "Ask u /some_name then.",
        "Ask u\\/some_name then.",
        "Ask u\u2044some_name then.",
        "Ask u\u2215some_name then.",
        "Ask u\uff0fsome_name then.",
    ],
)
def test_a_sentence_naming_a_reddit_account_is_dropped(text: str) -> None:
    assert names_a_user(text) and UserMention().reject({"sentence": text}) == "names_a_user"
    assert not names_a_user(mask_user_mentions(text).replace("u/<redacted>", ""))


@pytest.mark.parametrize(
    "text",
    [
        "Anna told you/me that she left.",
        "She posts in r/books.",
        "It is flu/cold season.",
        "Ask u/ab then.",
        "Type the user/password pair.",
        "Half\u2044quarter of you /them.",
    ],
)
def test_slashes_that_name_no_account_are_kept(text: str) -> None:
    assert not names_a_user(text) and mask_user_mentions(text) == text
