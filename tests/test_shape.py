import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.stages.shape import ShapeFilter


def context(config: ExtractConfig) -> ExtractContext:
    """A context whose spaCy pipeline is never loaded: the shape stage does not need it."""
    return ExtractContext(config, model_name="not loaded by this stage")


GOOD = "John met Bill at the old mill, but he did not say a word."


@pytest.mark.parametrize(
    ("text", "tokens", "reason"),
    [
        (GOOD, 14, None),
        (GOOD[0].lower() + GOOD[1:], 14, "no_capital_start"),
        (GOOD[:-1], 13, "bad_ending"),
        ("John met Bill, but he left.", 7, "too_few_spaces"),
        (" ".join(["Word"] * 34) + ".", 35, "too_many_spaces"),
        (GOOD, 31, "too_many_tokens"),
        ("John met Bill at the 2nd mill, but he did not say a word.", 14, "forbidden_character"),
        ("John met Bill at the old mill, but he did not say a + word.", 15, "forbidden_character"),
        ("John met Bill at the old mill, but he did not say a word;", 14, None),
    ],
)
def test_shape_rules(text: str, tokens: int, reason: str | None) -> None:
    assert ShapeFilter(context(ExtractConfig())).rejection(text, tokens) == reason


def test_limits_are_configurable() -> None:
    shape = ShapeFilter(context(ExtractConfig(min_spaces=2, max_tokens=8)))
    assert shape.rejection("John met Bill, but he left.", 7) is None
    assert shape.rejection(GOOD, 14) == "too_many_tokens"
