"""Antecedent filter: exactly two person noun phrases before the connective, the target pronoun after it.

The checks run in three steps so that the costly models see as few sentences as possible:
1. `locate_target` (words only): the pronoun rules, before any tagging;
2. `noun_phrases` (needs PTB tags, which every English spaCy model has): the two-NP rule;
3. `choose` (names list, and NER only where the names list is not enough): the person rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spacy.tokens import Doc

from knowref60k.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.connectives import TokenRange
from knowref60k.stats import StageStats

PRENOMINAL_TAGS = frozenset({"DT", "PDT", "PRP$", "WP$", "JJ", "JJR", "JJS", "CD"})
NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
PROPER_NOUN_TAGS = frozenset({"NNP", "NNPS"})
PREPOSITION_TAG = "IN"
RETAGGABLE_TAGS = frozenset({"NN", "NNS", "JJ", "FW", "UH"})
SENTENCE_OPENERS = frozenset({'"', "'", ":", "(", "-", "*"})
POSSESSIVE_TAG = "POS"


@dataclass(frozen=True, slots=True)
class Target:
    """The connective the antecedents precede, and the target pronoun after it."""

    connective: TokenRange
    pronoun: int


@dataclass(frozen=True, slots=True)
class NounPhrase:
    """A minimal noun phrase (tokens `start:end`) and its trailing run of proper nouns (`name_start:end`)."""

    start: int
    end: int
    name_start: int

    @property
    def has_name(self) -> bool:
        return self.name_start < self.end


def locate_target(
    words: Sequence[str], connectives: Sequence[TokenRange], blocking: frozenset[str]
) -> Target | str:
    """The pivot connective and the target pronoun, or the reason there is none.

    The target is the first third-person singular pronoun; the pivot is the last connective before it;
    no pronoun of the blocking list may come before the pivot.
    """
    pronoun = next((i for i, word in enumerate(words) if word in TARGET_PRONOUNS), None)
    if pronoun is None:
        return "no_target_pronoun"
    before = [c for c in connectives if c.end <= pronoun]
    if not before:
        return "pronoun_before_connective"
    pivot = before[-1]
    if any(word in blocking for word in words[: pivot.start]):
        return "pronoun_before_connective"
    return Target(pivot, pronoun)


def base_noun_phrases(tags: Sequence[str], limit: int) -> list[tuple[int, int]]:
    """Maximal `prenominal* noun+ (POS prenominal* noun+)*` runs of tokens `0:limit`."""
    phrases: list[tuple[int, int]] = []
    i = 0
    while i < limit:
        start = i
        end = _noun_run_end(tags, i, limit)
        if end is None:
            i = _skip_prenominals(tags, i, limit)
            i += 1 if i == start else 0
            continue
        while end < limit and tags[end] == POSSESSIVE_TAG:
            extended = _noun_run_end(tags, end + 1, limit)
            end = extended if extended is not None else end + 1
            if extended is None:
                break
        phrases.append((start, end))
        i = end
    return phrases


def _skip_prenominals(tags: Sequence[str], i: int, limit: int) -> int:
    while i < limit and tags[i] in PRENOMINAL_TAGS:
        i += 1
    return i


def _noun_run_end(tags: Sequence[str], i: int, limit: int) -> int | None:
    """End of `prenominal* noun+` starting at i, or None when no noun follows the prenominals."""
    i = _skip_prenominals(tags, i, limit)
    nouns_start = i
    while i < limit and tags[i] in NOUN_TAGS:
        i += 1
    return i if i > nouns_start else None


def corrected_tags(doc: Doc, first_names: frozenset[str]) -> list[str]:
    """PTB tags with capitalised words the tagger called common nouns or adjectives made proper nouns.

    Taggers trained on edited text miss rare names in comments ("Nate/NN", "Damian/JJ"). Inside a
    sentence a capitalised word is a name; at its start only a known first name is trusted.
    """
    tags = []
    for i, token in enumerate(doc):
        tag = token.tag_
        text = token.text
        if tag in RETAGGABLE_TAGS and text[:1].isupper() and not (len(text) > 1 and text.isupper()):
            inside = i > 0 and doc[i - 1].text not in SENTENCE_OPENERS
            if inside or text in first_names:
                tag = "NNP"
        tags.append(tag)
    return tags


def minimal_noun_phrases(tags: Sequence[str], limit: int) -> list[tuple[int, int]]:
    """Noun phrases ending before token `limit`, one per `NP (IN NP)*` group.

    As in the reference, "a portrait of Madeline" counts once, and its innermost phrase (Madeline) is
    the candidate antecedent.
    """
    groups: list[tuple[int, int]] = []
    for start, end in base_noun_phrases(tags, limit):
        previous = groups[-1] if groups else None
        if previous and start == previous[1] + 1 and tags[previous[1]] == PREPOSITION_TAG:
            groups[-1] = (start, end)
        else:
            groups.append((start, end))
    return groups


def _name_start(doc: Doc, tags: Sequence[str], start: int, end: int) -> int:
    """Start of the phrase's trailing run of capitalised proper nouns (== end when there is none)."""
    i = end
    while i > start and tags[i - 1] in PROPER_NOUN_TAGS and doc[i - 1].text[:1].isupper():
        i -= 1
    return i


class AntecedentFilter:
    """Applies the antecedent rules; `stats` counts sentences in, out and every reason for a drop."""

    def __init__(self, config: ExtractConfig, first_names: frozenset[str]) -> None:
        self.blocking = frozenset(config.blocking_pronouns) | frozenset(TARGET_PRONOUNS)
        self.use_names = config.person_detection in ("names", "both")
        self.use_ner = config.person_detection in ("ner", "both")
        self.only_two_phrases = config.antecedent_rule == "two_noun_phrases"
        self.first_names = first_names
        self.stats = StageStats()

    def target(self, words: Sequence[str], connectives: Sequence[TokenRange]) -> Target | None:
        self.stats.total += 1
        found = locate_target(words, connectives, self.blocking)
        if isinstance(found, str):
            self.stats.drop(found)
            return None
        return found

    def noun_phrases(self, doc: Doc, target: Target) -> list[NounPhrase] | None:
        """The minimal noun phrases before the connective, if they can still hold two persons."""
        tags = corrected_tags(doc, self.first_names)
        groups = minimal_noun_phrases(tags, target.connective.start)
        phrases = [NounPhrase(start, end, _name_start(doc, tags, start, end)) for start, end in groups]
        named = sum(phrase.has_name for phrase in phrases)
        if self.only_two_phrases and len(phrases) != 2:
            self.stats.drop(
                "fewer_than_two_noun_phrases" if len(phrases) < 2 else "more_than_two_noun_phrases"
            )
            return None
        if named < 2:
            self.stats.drop("fewer_than_two_persons")
            return None
        if named > 2 and self.use_names and not self.use_ner:
            self.stats.drop("more_than_two_persons")
            return None
        return phrases

    def needs_entities(self, doc: Doc, phrases: Sequence[NounPhrase]) -> bool:
        """Whether NER must run: the names list alone cannot settle which phrases are persons."""
        if not self.use_ner:
            return False
        named = [phrase for phrase in phrases if phrase.has_name]
        return not (self.use_names and all(self._known_name(doc, phrase) for phrase in named))

    def choose(
        self, doc: Doc, target: Target, phrases: Sequence[NounPhrase]
    ) -> tuple[NounPhrase, NounPhrase] | None:
        """The two person phrases, if they are the only ones, distinct, and not named after the connective."""
        persons = [phrase for phrase in phrases if phrase.has_name and self._is_person(doc, phrase)]
        if len(persons) != 2:
            self.stats.drop("fewer_than_two_persons" if len(persons) < 2 else "more_than_two_persons")
            return None
        first, second = persons
        if doc[first.end - 1].lower_ == doc[second.end - 1].lower_:
            self.stats.drop("identical_antecedents")
            return None
        names = {doc[i].lower_ for p in persons for i in range(p.name_start, p.end)}
        if any(token.lower_ in names for token in doc[target.connective.end :]):
            self.stats.drop("antecedent_repeated_after_connective")
            return None
        self.stats.forwarded += 1
        return first, second

    def _known_name(self, doc: Doc, phrase: NounPhrase) -> bool:
        return doc[phrase.name_start].text.capitalize() in self.first_names

    def _is_person(self, doc: Doc, phrase: NounPhrase) -> bool:
        if self.use_names and self._known_name(doc, phrase):
            return True
        return self.use_ner and any(
            doc[i].ent_type_ == "PERSON" for i in range(phrase.name_start, phrase.end)
        )
