"""The screen drops a comment on its raw body only when cleaning cannot give it a target pronoun."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.core.records import Comment
from knowref60k.core.stats import StageStats
from knowref60k.extract.cleaning import clean_text
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.nlp import WordFinder, resolve_model_name
from knowref60k.extract.stages.screen import Screen
from knowref60k.ingest.readers import iter_line_chunks, open_input, parse_chunk

PRONOUNS = WordFinder(["he", "she", "him", "his", "her", "hers", "hes", "shes"])


class Context:
    """What the stage reads of an ExtractContext, without loading a spaCy pipeline."""

    def __init__(self, pronouns: WordFinder = PRONOUNS, enabled: bool = True) -> None:
        self.config = ExtractConfig(surface_prefilter=enabled)
        self.target_pronouns = pronouns


def screened(body: str, context: Context | ExtractContext | None = None) -> bool:
    stage = Screen(context or Context())  # type: ignore[arg-type]
    return stage.reject(Comment("c", body, 1)) == "no_target_pronoun"


def holds_a_pronoun_after_cleaning(body: str, pronouns: WordFinder = PRONOUNS) -> bool:
    return any(pronouns.search(paragraph) for paragraph in clean_text(body))


def test_a_plain_body_without_a_target_pronoun_is_screened_out() -> None:
    assert screened("I like turtles.\n\n> They said it.\n\n# The end")
    assert not screened("I like how she plays.")
    assert not screened("I like how SHE plays.")
    assert not Screen(Context(enabled=False)).reject(Comment("c", "I like turtles.", 1))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "body",
    [
        "h`code`e said so",  # inline code
        "h*e* said so",  # emphasis
        "[sh](https://example.com)e said so",  # a link's target
        "shehttps://example.com said so",  # a URL
        "h&#101; said so",  # an HTML entity
        "h\x00e said so",  # a control character
        "h\u200be said so",  # an invisible character
        "\uff48\uff45 said so",  # full-width letters, which NFKC makes plain
    ],
)
def test_what_cleaning_can_join_into_a_pronoun_is_never_screened_out(body: str) -> None:
    assert holds_a_pronoun_after_cleaning(body), body
    assert not screened(body)


def test_on_random_markup_the_screen_drops_only_bodies_cleaning_leaves_without_a_pronoun() -> None:
    pieces = [
        *"hesimr HESI'.,_-*~`[]()>#&\n\t\x00\x1c",
        "\n\n",
        "    ",
        "&#104;",
        "&amp;",
        "**",
        "~~",
        "__",
        "](",
        "http://x.y",
        "www.",
        "\u200b",
        "\uff48",
        "\u2019",
    ]
    rng = random.Random(0)
    dropped = 0
    for _ in range(30_000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        if screened(body):
            dropped += 1
            assert not holds_a_pronoun_after_cleaning(body), repr(body)
    assert dropped > 3_000  # the check above ran on many bodies


@pytest.mark.integration
def test_on_real_comments_the_screen_drops_only_bodies_without_a_pronoun_after_cleaning(
    reddit_slice: Path,
) -> None:
    context = ExtractContext(ExtractConfig(), resolve_model_name(None))
    dropped = 0
    with open_input(reddit_slice) as (_raw, stream):
        for chunk in iter_line_chunks(stream, reddit_slice.name):
            for comment in parse_chunk(chunk, "ndjson", StageStats("lines"))[0]:
                if screened(comment.body, context):
                    dropped += 1
                    assert not holds_a_pronoun_after_cleaning(comment.body, context.target_pronouns)
    assert dropped > 15_000  # of 30,000 comments
