"""The antecedent rules, on hand-written sentences, with the real spaCy pipeline."""

from __future__ import annotations

from typing import Any

import pytest

from knowref60k.extract.pipeline import CandidateExtractor
from knowref60k.extract.records import Paragraph, Sentence
from knowref60k.extract.stages.antecedents import (
    AntecedentFilter,
    base_noun_phrases,
    locate_target,
    noun_phrase_groups,
)
from knowref60k.extract.stages.connectives import ConnectiveFilter, TokenRange
from knowref60k.extract.stages.shape import ShapeFilter
from knowref60k.extract.stages.split import Split
from knowref60k.ingest.readers import LineChunk


def run(extractor: CandidateExtractor, *sentences: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = "\n".join(sentences).encode() + b"\n"
    result = extractor.process("handwritten.txt", "text", LineChunk(1, data))
    return result.rows, result.stats.to_dict()["stages"]


def only_row(extractor: CandidateExtractor, sentence: str) -> dict[str, Any]:
    rows, stages = run(extractor, sentence)
    assert len(rows) == 1, stages
    return rows[0]


def assert_offsets_consistent(row: dict[str, Any]) -> None:
    for field in ("connective", "antecedent1", "antecedent2", "pronoun"):
        assert row["sentence"][row[f"{field}_start"] : row[f"{field}_end"]] == row[field]


@pytest.mark.integration
def test_accepts_a_classic_item_with_offsets(extractor: CandidateExtractor) -> None:
    row = only_row(extractor, "Roderick is painting a portrait of Madeline, but every pose exhausts her.")
    assert (row["antecedent1"], row["antecedent2"], row["pronoun"]) == ("Roderick", "Madeline", "her")
    assert row["connective"] == ", but" and row["pronoun_gender"] == "female"
    assert (
        row["antecedent1_start"] < row["antecedent2_start"] < row["connective_start"] < row["pronoun_start"]
    )
    assert_offsets_consistent(row)


@pytest.mark.integration
def test_dan_and_danny_are_two_different_antecedents(extractor: CandidateExtractor) -> None:
    row = only_row(extractor, "Dan played tennis with Danny all afternoon because he was bored at home.")
    assert {row["antecedent1"], row["antecedent2"]} == {"Dan", "Danny"}
    assert_offsets_consistent(row)


@pytest.mark.integration
def test_antecedent_named_again_after_the_connective_is_kept(extractor: CandidateExtractor) -> None:
    row = only_row(extractor, "Dan played tennis with Danny all afternoon because Dan said he was bored.")
    assert (row["antecedent1"], row["antecedent2"]) == ("Dan", "Danny")


@pytest.mark.integration
def test_a_name_both_antecedents_share_named_again_is_rejected(extractor: CandidateExtractor) -> None:
    rows, stages = run(
        extractor, "Tom Hanks played tennis with Tom Brady all afternoon because Tom said he was bored."
    )
    assert rows == []
    assert stages["antecedent"]["dropped"] == {"ambiguous_repeated_name": 1}


@pytest.mark.integration
def test_two_separate_connectives_are_rejected(extractor: CandidateExtractor) -> None:
    rows, stages = run(extractor, "Dan called Mary because he was bored at home, but she did not answer him.")
    assert rows == []
    assert stages["connective"]["dropped"] == {"too_many_connectives": 1}


@pytest.mark.integration
def test_non_person_noun_phrase_is_rejected(extractor: CandidateExtractor) -> None:
    rows, stages = run(
        extractor, "The storm damaged the Golden Gate Bridge near Oakland, so he stayed home all week."
    )
    assert rows == []
    assert stages["antecedent"]["dropped"] == {"fewer_than_two_persons": 1}


@pytest.mark.integration
def test_pronoun_before_the_connective_is_rejected(extractor: CandidateExtractor) -> None:
    rows, stages = run(extractor, "He said that John met Mary at the bar, but she did not listen to a word.")
    assert rows == []
    assert stages["antecedent"]["dropped"] == {"pronoun_before_connective": 1}
    # Between the names and the connective, the surface pre-filter already sees it on the plain string.
    rows, stages = run(extractor, "John told Mary about his new car, but she did not listen to a word.")
    assert rows == []
    assert stages["surface"]["dropped"] == {"no_possible_sentence": 1}


@pytest.mark.integration
def test_a_sentence_with_one_name_like_word_before_the_connective_is_never_tagged(
    extractor: CandidateExtractor,
) -> None:
    text = "ROFL Roderick painted the old lake house, but every single pose exhausted her."
    stages = [stage(extractor.context) for stage in (Split, ShapeFilter, ConnectiveFilter, AntecedentFilter)]
    sentences: list[Sentence] = []
    for stage in stages[:-1]:
        sentences = list(stage.run(sentences or [Paragraph(None, 0, text)]))  # type: ignore[arg-type]
    antecedents = stages[-1]
    assert list(antecedents.run(sentences)) == []
    assert antecedents.stats.dropped == {"fewer_than_two_persons": 1}
    assert sentences[0].target is None and sentences[0].doc is None  # the tagger never saw it
    # The same reason as after tagging, where the noun phrases hold fewer than two names.
    rows, stats = run(extractor, "Roderick painted the Old Lake House, but every single pose exhausted her.")
    assert rows == [] and stats["antecedent"]["dropped"] == {"fewer_than_two_persons": 1}


@pytest.mark.integration
def test_multi_word_and_hyphenated_names_stay_whole(extractor: CandidateExtractor) -> None:
    row = only_row(extractor, "Daniel Day-Lewis worked with Tony Parker for years, but he never liked it.")
    assert (row["antecedent1"], row["antecedent2"]) == ("Daniel Day-Lewis", "Tony Parker")
    assert_offsets_consistent(row)


def test_locate_target_picks_last_connective_before_the_first_pronoun() -> None:
    words = "john met bill , and then mary came because he was late".split()
    target = locate_target(words, [TokenRange(3, 4), TokenRange(8, 9)], frozenset({"he", "it"}))
    assert target != "no_target_pronoun" and not isinstance(target, str)
    assert target.connective == TokenRange(8, 9) and target.pronoun == 9


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("john met bill , but it rained".split(), "no_target_pronoun"),
        ("he met bill , but she left".split(), "pronoun_before_connective"),
        ("it was john , but he left".split(), "pronoun_before_connective"),
    ],
)
def test_locate_target_reasons(words: list[str], reason: str) -> None:
    blocking = frozenset({"he", "she", "it"})
    connectives = [TokenRange(words.index(","), words.index(",") + 2)]
    assert locate_target(words, connectives, blocking) == reason


def test_noun_phrase_chunking_on_tags() -> None:
    words = "roderick is painting a portrait of madeline , but".split()
    tags = ["NNP", "VBZ", "VBG", "DT", "NN", "IN", "NNP", ",", "CC"]
    assert base_noun_phrases(tags, 7) == [(0, 1), (3, 5), (6, 7)]
    assert noun_phrase_groups(words, tags, 7) == [[(0, 1)], [(3, 5), (6, 7)]]
    # Only "of" joins two phrases: "the same kind of President that Bush ..." keeps Bush apart.
    words = "kind of president that bush".split()
    assert noun_phrase_groups(words, ["NN", "IN", "NNP", "IN", "NNP"], 5) == [[(0, 1), (2, 3)], [(4, 5)]]
    assert base_noun_phrases(["NNP", "POS", "JJ", "NN", "VBD"], 5) == [(0, 4)]
    assert base_noun_phrases(["DT", "JJ", "VBD", "NN"], 4) == [(3, 4)]


@pytest.mark.integration
def test_capitalised_common_word_at_sentence_start_is_no_person(extractor: CandidateExtractor) -> None:
    rows, stages = run(
        extractor, "Race was a factor in the perception of Peyton Hillis, and that hurt his chances."
    )
    assert rows == []
    assert stages["antecedent"]["dropped"] == {"fewer_than_two_persons": 1}


@pytest.mark.integration
def test_popular_first_name_at_sentence_start_is_a_person(extractor: CandidateExtractor) -> None:
    row = only_row(
        extractor, "Mark was a factor in the decision of Peyton Hillis, and that hurt his chances."
    )
    assert (row["antecedent1"], row["antecedent2"]) == ("Mark", "Peyton Hillis")
