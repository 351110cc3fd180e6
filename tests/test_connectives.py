from knowref60k.core.config import ExtractConfig
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.records import TokenRange
from knowref60k.extract.stages.connectives import ConnectiveFilter, ConnectiveFinder


def words(sentence: str) -> list[str]:
    return sentence.lower().replace(",", " ,").replace(".", " .").split()


def test_comma_but_collapses_into_one_connective() -> None:
    found = ConnectiveFinder(ExtractConfig().connectives).find(words("John met Bill, but he left."))
    assert found == [TokenRange(3, 5)]


def test_multi_word_connective_matches_as_one() -> None:
    tokens = words("John called Bill even though he was busy.")
    found = ConnectiveFinder(ExtractConfig().connectives).find(tokens)
    assert [tokens[c.start : c.end] for c in found] == [["even", "though"]]


def test_matching_ignores_case() -> None:
    assert ConnectiveFinder(["because"]).find(["BECAUSE"]) == [TokenRange(0, 1)]


def test_two_separate_connectives_are_rejected_by_default() -> None:
    connective_filter = ConnectiveFilter(ExtractContext(ExtractConfig(), model_name="not loaded"))
    tokens = words("John met Bill because he was bored, but he left.")
    assert connective_filter.connectives(tokens) == "too_many_connectives"


def test_limit_of_two_accepts_two_separate_connectives() -> None:
    connective_filter = ConnectiveFilter(
        ExtractContext(ExtractConfig(max_connectives=2), model_name="not loaded")
    )
    found = connective_filter.connectives(words("John met Bill because he was bored, but he left."))
    assert found == [TokenRange(3, 4), TokenRange(7, 9)]  # ", but" collapses into one


def test_final_semicolon_ends_the_sentence_and_is_not_a_connective() -> None:
    connective_filter = ConnectiveFilter(ExtractContext(ExtractConfig(), model_name="not loaded"))
    found = connective_filter.connectives(["john", "met", "bill", "when", "he", "left", ";"])
    assert found == [TokenRange(3, 4)]


def test_sentence_without_connective_is_dropped_with_its_reason() -> None:
    connective_filter = ConnectiveFilter(ExtractContext(ExtractConfig(), model_name="not loaded"))
    assert connective_filter.connectives(words("John met Bill and he left.")) == "no_connective"
