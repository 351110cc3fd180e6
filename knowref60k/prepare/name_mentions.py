"""Other mentions of the two antecedents' names in a sentence ("Donald Trump said ... because Trump ..."):
which ones name that person and are renamed with the antecedent, and which leave the item ambiguous, so
that it is dropped rather than shown with an original name standing beside the new ones.

A mention is a run of adjacent words outside the antecedents and the pronoun: capitalised words, titles,
and words of a name written in lower case. A run is a mention of antecedent k when it holds a word of k's
name (or the whole of k's name again) and nothing else but titles; then the whole run takes k's new name
("President Obama" -> "Paul", "Trump's" -> "Paul's"). The item is dropped when a run:

- holds a word of both names ("Bush" after George Bush and Jeb Bush): `name_of_both`;
- holds another capitalised word, a name the antecedent's is part of ("Usain Bolt" after "Bolt", "Tony
  Romo" after "Tony Parker", "Trump Tower"): `name_in_other_name`;
- is a single name word that is also a common word and starts a sentence ("Will" after "Will Smith"):
  the person or the word, capitals cannot tell: `name_or_word_at_sentence_start`.

A word is matched whole: "Dan" is never found in "Danny", "Obamacare" or "anti-Obama". A common word in
lower case ("will" beside Will Smith) is the word; a rare one ("johnny" beside Johnny) is the person.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from knowref60k.core.names import reddit_common_words
from knowref60k.extract.persons import TITLES

NAME_OF_BOTH = "name_of_both"
NAME_IN_OTHER_NAME = "name_in_other_name"
NAME_OR_WORD = "name_or_word_at_sentence_start"

# A word with inner apostrophes and hyphens ("O'Neill", "Day-Lewis", "Trump's").
_WORD = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")
_POSSESSIVE = re.compile(r"['’]s$")
# Capitalised words that never name a person alone ("The" of `Dwayne "The Rock" Johnson`, "If" after a
# dash): articles, pronouns, conjunctions, prepositions.
_FUNCTION_WORDS = frozenset(
    """the a an this that these those i you he she it we they him her his hers its our their and or but
    nor so yet if then when while because as than of in on at to for from with by about vs""".split()
)
# What may stand between a sentence's end (or the text's start) and its first word.
_SENTENCE_START = re.compile(r"(?:^|[.!?:;…\n])[\s\"'“‘(\[*_>-]*$")
SPANS = ("antecedent1", "antecedent2", "pronoun")


class Kind(Enum):
    # Ends a run: an antecedent, the pronoun, a lower-case word, "The", "I". Around an
    # antecedent a run is what is left ("Keita" of "the Keita Salah pairing", with Salah an antecedent).
    BREAK = "break"
    NAME = "name"  # a word of one antecedent's name
    BOTH = "both"  # a word of both names
    TITLE = "title"
    OTHER = "other"  # another capitalised word


@dataclass(frozen=True)
class Word:
    start: int
    end: int  # without a possessive "'s"
    kind: Kind
    which: int = -1  # the antecedent (0 or 1) a NAME word belongs to
    possessive: bool = False
    # A common word starting a sentence ("Will he ..."): its capital says nothing.
    ambiguous_capital: bool = False


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    which: int  # 0: antecedent1, 1: antecedent2


@dataclass(frozen=True)
class NameMentions:
    """The mentions to rename, in text order, or the reason the item cannot be renamed safely."""

    mentions: tuple[Mention, ...]
    problem: str | None = None


def name_words(antecedent: str) -> frozenset[str]:
    """The words of a name that mention its bearer on their own, lower-cased: its capitalised words but
    titles ("President") and function words ("The" of `"The Rock"`), initials too short to tell; the
    words of a name written all in lower case ("eggman") that are not common words."""
    words = [_POSSESSIVE.sub("", match.group()) for match in _WORD.finditer(antecedent)]
    capitalised = [word for word in words if word[0].isupper()]
    common = reddit_common_words()
    kept = capitalised or [word for word in words if word.lower() not in common]
    return frozenset(
        word.lower()
        for word in kept
        if len(word) > 1 and not _is_title(word) and word.lower() not in _FUNCTION_WORDS
    )


def _is_title(word: str) -> bool:
    return word.lower() in TITLES or f"{word.lower()}." in TITLES


def _repeats(row: Mapping[str, Any]) -> list[tuple[int, int, int]]:
    """(start, end, antecedent) of every other whole occurrence of an antecedent's whole text ("Lord
    Commander", "bin Laden", "the Doctor"), whatever its words; not of a name that is one common word in
    lower case ("taco"): another "taco" is the word."""
    sentence = row["sentence"]
    found = []
    for which, field in enumerate(("antecedent1", "antecedent2")):
        if row[field].islower() and row[field] in reddit_common_words():
            continue
        for match in re.finditer(rf"(?<![\w'’-]){re.escape(row[field])}(?![\w-])", sentence):
            if match.start() != row[f"{field}_start"]:
                found.append((match.start(), match.end(), which))
    return found


def _classify(row: Mapping[str, Any]) -> list[Word]:
    """Every word of the sentence, with what it is to the antecedents' names."""
    sentence = row["sentence"]
    fixed = [(row[f"{span}_start"], row[f"{span}_end"]) for span in SPANS]
    repeats = _repeats(row)
    names = [name_words(row["antecedent1"]), name_words(row["antecedent2"])]
    common = reddit_common_words()
    words = []
    for match in _WORD.finditer(sentence):
        start, text = match.start(), match.group()
        base = _POSSESSIVE.sub("", text)
        end = start + len(base)
        inside = any(s < end and start < e for s, e in fixed)
        repeat = next((which for s, e, which in repeats if s <= start and end <= e), None)
        lower, capital = base.lower(), base[0].isupper()
        owners = [which for which in (0, 1) if lower in names[which]]
        if inside:
            kind = Kind.BREAK
        elif repeat is not None:
            kind, owners = Kind.NAME, [repeat]
        elif owners and (capital or lower not in common):
            kind = Kind.BOTH if len(owners) == 2 else Kind.NAME
        elif not capital or lower in _FUNCTION_WORDS:
            kind = Kind.BREAK
        elif _is_title(base):
            kind = Kind.TITLE
        else:
            kind = Kind.BREAK if _starts_sentence(sentence, start) and lower in common else Kind.OTHER
        ambiguous = capital and lower in common and _starts_sentence(sentence, start)
        which = owners[0] if kind is Kind.NAME else -1
        words.append(Word(start, end, kind, which, len(base) < len(text), ambiguous))
    return words


def _starts_sentence(sentence: str, start: int) -> bool:
    return _SENTENCE_START.search(sentence, 0, start) is not None


def _joined(sentence: str, left: Word, right: Word) -> bool:
    """Whether two words stand in one name: a space apart, or after an initial or an abbreviated title
    ("J. R. R. Tolkien", "Mr. Correa"), the left one not possessive."""
    gap = sentence[left.end : right.start]
    if left.possessive:
        return False
    if gap == " ":
        return True
    short = left.end - left.start == 1 or _is_title(sentence[left.start : left.end])
    return gap == ". " and short


def _runs(row: Mapping[str, Any]) -> list[list[Word]]:
    """The runs of adjacent words that are not BREAK words, in text order."""
    found: list[list[Word]] = []
    for word in _classify(row):
        if word.kind is Kind.BREAK:
            continue
        if found and _joined(row["sentence"], found[-1][-1], word):
            found[-1].append(word)
        else:
            found.append([word])
    return found


def _judge(run: list[Word]) -> Mention | str | None:
    """A run's mention, the reason it makes the item ambiguous, or None when it names no antecedent."""
    kinds = {word.kind for word in run}
    owners = {word.which for word in run if word.kind is Kind.NAME}
    if not kinds & {Kind.NAME, Kind.BOTH}:
        return None
    if Kind.BOTH in kinds or len(owners) > 1:
        return NAME_OF_BOTH
    if Kind.OTHER in kinds:
        return NAME_IN_OTHER_NAME
    if len(run) == 1 and run[0].ambiguous_capital:
        return NAME_OR_WORD
    return Mention(run[0].start, run[-1].end, owners.pop())


def name_mentions(row: Mapping[str, Any]) -> NameMentions:
    """The other mentions of both antecedents, or the first reason (in text order) that the item cannot
    be renamed without leaving an original name or renaming a word that is not the person."""
    mentions: list[Mention] = []
    for run in _runs(row):
        judged = _judge(run)
        if isinstance(judged, str):
            return NameMentions(tuple(mentions), judged)
        if judged is not None:
            mentions.append(judged)
    return NameMentions(tuple(mentions))
