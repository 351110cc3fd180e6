"""Person detection v2 on hand-written sentences (one per rule), with the real spaCy pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowref60k.core.errors import UserError
from knowref60k.core.names import NameLexicon, world_first_names
from knowref60k.extract.persons import NAME_SHAPE, TITLES
from knowref60k.extract.pipeline import CandidateExtractor
from tests.test_antecedents import assert_offsets_consistent, only_row, run

ACCEPTED = [
    pytest.param(
        "Daniel Day-Lewis beat Tom Hanks at the awards because he was brilliant in that film.",
        ("Daniel Day-Lewis", "Tom Hanks", "he"),
        id="hyphenated name",
    ),
    pytest.param(
        'Dwayne "The Rock" Johnson fought Vin Diesel on the set because he was angry about the script.',
        ('Dwayne "The Rock" Johnson', "Vin Diesel", "he"),
        id="nickname in quotes",
    ),
    pytest.param(
        "President Obama called Senator Warren late last night because he needed her vote on the bill.",
        ("President Obama", "Senator Warren", "he"),
        id="titles",
    ),
    pytest.param(
        "Okafor thanked Brennan at the end of the game after he scored the winning goal.",
        ("Okafor", "Brennan", "he"),
        id="surnames only",
    ),
    pytest.param(
        "Hayato met Arisa at the station last week, but she did not recognise him at first.",
        ("Hayato", "Arisa", "she"),
        id="non-US given names",
    ),
    pytest.param(
        "Lily married Jonathan last spring, so she moved to his town.",
        ("Lily", "Jonathan", "she"),
        id="given name the tagger reads as an adverb",
    ),
    pytest.param(
        "Marcus wanted Brittany out so much that he kept starting fights.",
        ("Marcus", "Brittany", "he"),
        id="given name the tagger reads as a verb",
    ),
    pytest.param(
        "Steph wants Danni out of the house, but she has not told anyone yet.",
        ("Steph", "Danni", "she"),
        id="non-US given name opening the sentence",
    ),
    pytest.param(
        "Andrew is nowhere near as fast as Cam but his passing is much better.",
        ("Andrew", "Cam", "his"),
        id="given name that is also a common word",
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize(("sentence", "expected"), ACCEPTED)
def test_whole_names_of_two_people_are_the_antecedents(
    extractor: CandidateExtractor, sentence: str, expected: tuple[str, str, str]
) -> None:
    row = only_row(extractor, sentence)
    assert (row["antecedent1"], row["antecedent2"], row["pronoun"]) == expected
    assert_offsets_consistent(row)


REJECTED = [
    pytest.param(
        "Okafor met Brennan at Wembley last week because he wanted to see the final.",
        "other_name_before_connective",
        id="another name before the connective",
    ),
    pytest.param(
        "Sarah joined Microsoft last year, but she still talks to her old team every single week.",
        "fewer_than_two_persons",
        id="organisation",
    ),
    pytest.param(
        "We watched Frozen with Anna last night because she loves all of the songs in it.",
        "fewer_than_two_persons",
        id="title of a film",
    ),
    pytest.param(
        "John argued with Michael for an hour in the kitchen because she was late again.",
        "pronoun_agrees_with_neither",
        id="two men and she",
    ),
    pytest.param(
        "Okafor argued with Brennan for an hour, but Mary said she was late for the meeting.",
        "pronoun_agrees_with_neither",
        id="third person before the pronoun",
    ),
    pytest.param(
        "Moses spoke to Aaron in the desert, but His voice was heard by everyone.",
        "capitalised_pronoun",
        id="reverential pronoun",
    ),
]


@pytest.mark.integration
@pytest.mark.parametrize(("sentence", "reason"), REJECTED)
def test_sentences_without_two_people_the_pronoun_can_mean_are_dropped(
    extractor: CandidateExtractor, sentence: str, reason: str
) -> None:
    rows, stages = run(extractor, sentence)
    assert rows == []
    assert stages["antecedent"]["dropped"] == {reason: 1}


def test_a_name_no_list_has_must_look_like_one() -> None:
    for name in ("Okafor", "Day-Lewis", "O'Neill", "Zelensky"):
        assert NAME_SHAPE.match(name), name
    for word in ("PvZ", "SnooRoar", "iPhone", "USA", "A"):
        assert not NAME_SHAPE.match(word), word
    assert {"president", "uncle", "dr."} <= TITLES


def test_gender_needs_a_clear_majority_of_bearers() -> None:
    lexicon = NameLexicon(
        first_names=frozenset(),
        popular_first_names=frozenset(),
        common_words=frozenset(),
        female_share={"Mary": 0.997, "John": 0.004, "Jordan": 0.27},
    )
    assert lexicon.gender("mary", 0.95) == "female"
    assert lexicon.gender("John", 0.95) == "male"
    assert lexicon.gender("Jordan", 0.95) is None
    assert lexicon.gender("Okafor", 0.95) is None


def test_a_name_list_with_a_broken_row_is_refused_with_its_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "world_first_names.tsv"
    broken.write_text("name\tsources\tcounts\tfemale_share\nAda\t5\t900\t0.99\nBob\t5\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"world_first_names.tsv, line 3: 2 tab-separated fields, expected 4"):
        world_first_names.__wrapped__(tmp_path)
    good = tmp_path / "ok" / "world_first_names.tsv"
    good.parent.mkdir()
    good.write_text("name\tsources\tcounts\tfemale_share\nAda\t5\t900\t0.99\n", encoding="utf-8")
    assert world_first_names.__wrapped__(good.parent) == {"Ada": 0.99}
    good.write_text("", encoding="utf-8")
    with pytest.raises(UserError, match="empty, expected a header line"):
        world_first_names.__wrapped__(good.parent)
