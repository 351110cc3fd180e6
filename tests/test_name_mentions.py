"""Other mentions of the antecedents' names: renamed with their antecedent when they are that person, the
item dropped with a counted reason when the sentence cannot tell (knowref60k.prepare.name_mentions)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from knowref60k.prepare.name_mentions import (
    NAME_IN_OTHER_NAME,
    NAME_OF_BOTH,
    NAME_OR_WORD,
    name_mentions,
)
from knowref60k.prepare.perturb import perturb
from knowref60k.prepare.preparer import Preparer
from knowref60k.prepare.stages.name_mentions import NameMention
from knowref60k.settings.effective import RunConfig
from tests.test_prepare import POOLS, candidates_file, check_item, handmade


def renamed(sentence: str, first: str, second: str, pronoun: str = "he", gender: str = "male") -> str:
    """The perturbed sentence, with the new names written back as {1} and {2}."""
    row = handmade(sentence, first, second, pronoun, gender)
    assert name_mentions(row).problem is None and NameMention().reject(row) is None
    item = perturb(row, POOLS, 60_000)
    check_item(row, item)
    return item.sentence.replace(item.name1, "{1}").replace(item.name2, "{2}")


def dropped(sentence: str, first: str, second: str, pronoun: str = "he", gender: str = "male") -> str | None:
    return NameMention().reject(handmade(sentence, first, second, pronoun, gender))


@pytest.mark.parametrize(
    ("sentence", "first", "second", "expected"),
    [
        # The whole name again.
        (
            "Donald Trump met Joe Biden, but Donald Trump said he was tired.",
            "Donald Trump",
            "Joe Biden",
            "{1} met {2}, but {1} said he was tired.",
        ),
        # The surname alone, the first name alone.
        (
            "Dan Marino met Tom Brady, but Brady said he was tired and Dan agreed.",
            "Dan Marino",
            "Tom Brady",
            "{1} met {2}, but {2} said he was tired and {1} agreed.",
        ),
        # Possessives, with an "s" and bare.
        (
            "Donald Trump met James Woods, but Trump's aide said he saw Woods' car.",
            "Donald Trump",
            "James Woods",
            "{1} met {2}, but {1}'s aide said he saw {2}'s car.",
        ),
        # A title before a mention goes with it, as it does with an antecedent.
        (
            "Barack Obama met Joe Biden, but President Obama said he was late.",
            "Barack Obama",
            "Joe Biden",
            "{1} met {2}, but {1} said he was late.",
        ),
        # Names that are common words, inside a sentence, are the person; in lower case, the word.
        (
            "Will Smith met Bill Gates, but he said Will will pay the bill for Bill.",
            "Will Smith",
            "Bill Gates",
            "{1} met {2}, but he said {1} will pay the bill for {2}.",
        ),
        # A name written in lower case that is no common word is the person.
        ("Johnny met Arrow, but johnny said he won.", "Johnny", "Arrow", "{1} met {2}, but {1} said he won."),
        # An article goes with a mention only where it went with the antecedent.
        (
            "The Doctor met Donald Trump, but the Doctor said he hated the Trump administration.",
            "Doctor",
            "Donald Trump",
            "{1} met {2}, but {1} said he hated the {2} administration.",
        ),
        # A name inside another word is never renamed, nor a reason to drop.
        (
            "Dan met Barack Obama, but he hated Danny, Obamacare and the anti-Obama crowd.",
            "Dan",
            "Barack Obama",
            "{1} met {2}, but he hated Danny, Obamacare and the anti-Obama crowd.",
        ),
    ],
)
def test_other_mentions_of_a_name_get_its_new_name(
    sentence: str, first: str, second: str, expected: str
) -> None:
    assert renamed(sentence, first, second) == expected


def test_a_common_word_starting_a_sentence_is_not_renamed() -> None:
    """ "Will" starting a sentence may be the modal verb: neither renamed nor left as a name; the item goes,
    counted. Inside a sentence, or followed by the rest of the name, it is the person."""
    modal = "Will Smith met Chris Rock, and he was calm. Will he ever forget it?"
    assert dropped(modal, "Will Smith", "Chris Rock") == NAME_OR_WORD
    assert dropped("Bill Gates met Steve Jobs, and he was calm. Bill left.", "Bill Gates", "Steve Jobs") == (
        NAME_OR_WORD
    )
    whole = "Will Smith met Chris Rock, and he was calm. Will Smith left."
    assert renamed(whole, "Will Smith", "Chris Rock") == "{1} met {2}, and he was calm. {1} left."
    # A name that is no common word is the person wherever it stands.
    trump = "Donald Trump met Joe Biden, and he was calm. Trump left."
    assert renamed(trump, "Donald Trump", "Joe Biden") == "{1} met {2}, and he was calm. {1} left."


@pytest.mark.parametrize(
    ("sentence", "first", "second", "reason"),
    [
        ("George Bush met Jeb Bush, but Bush said he was tired.", "George Bush", "Jeb Bush", NAME_OF_BOTH),
        (
            "Tony Parker met Tim Duncan, but Tony Romo said he was tired.",
            "Tony Parker",
            "Tim Duncan",
            NAME_IN_OTHER_NAME,
        ),
        ("Bolt met Carl Lewis, but he knows Usain Bolt is faster.", "Bolt", "Carl Lewis", NAME_IN_OTHER_NAME),
        (
            "Donald Trump met Joe Biden, but he stayed in Trump Tower.",
            "Donald Trump",
            "Joe Biden",
            NAME_IN_OTHER_NAME,
        ),
    ],
)
def test_a_mention_the_sentence_cannot_tell_drops_the_item(
    sentence: str, first: str, second: str, reason: str
) -> None:
    assert dropped(sentence, first, second) == reason


def test_names_run_together_are_told_apart_by_the_antecedents() -> None:
    # "My Keita Salah pairing", with both antecedents in it: the later "Keita" is Keita.
    sentence = "My Keita Salah pairing is great, but Keita said he was tired."
    assert renamed(sentence, "Keita", "Salah") == "My {1} {2} pairing is great, but {1} said he was tired."
    # Both names run together again after the antecedents: one mention or two people, the item goes.
    again = "Keita met Salah, but he loves the Keita Salah pairing."
    assert dropped(again, "Keita", "Salah") == NAME_OF_BOTH


def test_name_mention_drops_are_counted_in_the_prepare_funnel(tmp_path: Path) -> None:
    rows = [
        handmade(
            "George Bush met Jeb Bush, but Bush said he left.", "George Bush", "Jeb Bush", "he", "male", "b"
        ),
        handmade(
            "Tony Parker met Tim Duncan, but Tony Romo said he left.",
            "Tony Parker",
            "Tim Duncan",
            "he",
            "male",
            "r",
        ),
        handmade(
            "Donald Trump met Joe Biden, but Trump said he left.",
            "Donald Trump",
            "Joe Biden",
            "he",
            "male",
            "t",
        ),
    ]
    source = candidates_file(tmp_path / "c" / "RC_2099-06.candidates.parquet", rows)
    with Preparer(RunConfig.load().prepare, tmp_path / "index.sqlite") as preparer:
        report = preparer.prepare_file(source, tmp_path / "items")
    assert report.stats["name_mention"].dropped == {NAME_OF_BOTH: 1, NAME_IN_OTHER_NAME: 1}
    # Dropped before de-duplication, so the index never keeps an item that was not made.
    assert report.stats["dedup"].total == 1
    (item,) = pq.read_table(report.rows_path).to_pylist()
    assert (
        item["perturbed_sentence"]
        == f"{item['name1']} met {item['name2']}, but {item['name1']} said he left."
    )
