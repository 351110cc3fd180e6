from knowref60k.core.config import ExtractConfig
from knowref60k.extract.stages.connectives import ConnectiveFilter, ConnectiveFinder, TokenRange


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
    connective_filter = ConnectiveFilter(ExtractConfig())
    tokens = words("John met Bill because he was bored, but he left.")
    assert connective_filter.connectives(tokens) is None
    assert connective_filter.stats.dropped == {"too_many_connectives": 1}


def test_limit_of_two_accepts_two_separate_connectives() -> None:
    connective_filter = ConnectiveFilter(ExtractConfig(max_connectives=2))
    found = connective_filter.connectives(words("John met Bill because he was bored, but he left."))
    assert found is not None and len(found) == 2


def test_final_semicolon_ends_the_sentence_and_is_not_a_connective() -> None:
    connective_filter = ConnectiveFilter(ExtractConfig())
    found = connective_filter.connectives(["john", "met", "bill", "when", "he", "left", ";"])
    assert found == [TokenRange(3, 4)]


def test_sentence_without_connective_is_counted() -> None:
    connective_filter = ConnectiveFilter(ExtractConfig())
    assert connective_filter.connectives(words("John met Bill and he left.")) is None
    assert connective_filter.stats.dropped == {"no_connective": 1}
    assert connective_filter.stats.total == 1 and connective_filter.stats.forwarded == 0
