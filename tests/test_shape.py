import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.extract.stages.shape import ShapeFilter

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
    assert ShapeFilter(ExtractConfig()).rejection(text, tokens) == reason


def test_limits_are_configurable_and_counted() -> None:
    shape = ShapeFilter(ExtractConfig(min_spaces=2, max_tokens=8))
    assert shape.keep("John met Bill, but he left.", 7)
    assert not shape.keep(GOOD, 14)
    assert shape.stats.dropped == {"too_many_tokens": 1}
