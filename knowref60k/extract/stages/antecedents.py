"""Antecedent filter: exactly two person noun phrases before the connective, the target pronoun after it.

The checks run in three steps so that the costly models see as few sentences as possible:
1. `locate_target` (words only): the pronoun rules, before any tagging (and, but for the
   two-noun-phrase rule, at least two words that look like names);
2. `noun_phrases` (needs PTB tags, which every English spaCy model has): the noun phrases, at least two
   of them with a name;
3. `choose`: the person rule (name lists, and the entity labels where the mode uses NER: NER runs on
   every sentence that reaches this step then), or, by score, the two named phrases as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from spacy.tokens import Doc

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.core.names import NameLexicon
from knowref60k.extract.context import ExtractContext, ExtractStage
from knowref60k.extract.persons import QUOTES, PersonRule, is_sentence_initial, split_on_persons
from knowref60k.extract.records import NounPhrase, Sentence, Target, TokenRange

PRENOMINAL_TAGS = frozenset({"DT", "PDT", "PRP$", "WP$", "JJ", "JJR", "JJS", "CD"})
# The hyphen inside a name ("Day-Lewis", "Obi-Wan") gets a tag of its own so the name stays one phrase.
NAME_HYPHEN_TAG = "NNP-HYPH"
NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", NAME_HYPHEN_TAG})
PROPER_NOUN_TAGS = frozenset({"NNP", "NNPS", NAME_HYPHEN_TAG})
PREPOSITION_TAG = "IN"
RETAGGABLE_TAGS = frozenset({"NN", "NNS", "JJ", "FW", "UH"})
NAME_MISREAD_TAGS = frozenset({"RB", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ"})
# Tagged NN, but adverbs of time: "called Michael yesterday" must not make "Michael yesterday" one phrase.
TIME_ADVERBS = frozenset({"yesterday", "today", "tonight", "tomorrow"})
POSSESSIVE_TAG = "POS"


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


def corrected_tags(doc: Doc, lexicon: NameLexicon) -> list[str]:
    """PTB tags with capitalised words the tagger did not call proper nouns made proper nouns.

    Taggers trained on edited text miss rare names in comments ("Nate/NN", "Damian/JJ"), and read names by
    their endings ("Lily/RB", "Brittany/VB"). Inside a sentence a capitalised noun or adjective is a name;
    at its start, where every word is capitalised, only a known given name; a capitalised adverb or verb
    only when it is a given name that is no common word. Hyphens inside names and adverbs of time tagged
    as nouns are fixed too.
    """
    tags = []
    for i, token in enumerate(doc):
        tag = token.tag_
        if looks_like_name(token.text) and _misread_name(doc, i, lexicon):
            tag = "NNP"
        elif token.text == "-" and _joins_names(doc, i):
            tag = NAME_HYPHEN_TAG
        elif token.lower_ in TIME_ADVERBS:
            tag = "RB"
        tags.append(tag)
    for opening, closing in _quoted_nicknames(doc):
        tags[opening : closing + 1] = [NAME_HYPHEN_TAG, *(["NNP"] * (closing - opening - 1)), NAME_HYPHEN_TAG]
    return tags


def _misread_name(doc: Doc, i: int, lexicon: NameLexicon) -> bool:
    text, tag = doc[i].text, doc[i].tag_
    given_name = lexicon.is_first_name(text) or lexicon.is_world_name(text)
    if tag in RETAGGABLE_TAGS:
        if not is_sentence_initial(doc, i) or lexicon.is_first_name(text):
            return True
        return given_name and not lexicon.is_common_word(text)
    return tag in NAME_MISREAD_TAGS and given_name and not lexicon.is_common_word(text)


def _quoted_nicknames(doc: Doc, longest: int = 4) -> Iterator[tuple[int, int]]:
    """Quotes around a capitalised nickname inside a name: Jesse "The Body" Ventura."""
    for opening in range(1, len(doc) - 2):
        if doc[opening].text not in QUOTES or not looks_like_name(doc[opening - 1].text):
            continue
        for closing in range(opening + 2, min(opening + longest + 2, len(doc) - 1)):
            if doc[closing].text in QUOTES:
                inside = doc[opening + 1 : closing]
                if all(looks_like_name(token.text) for token in inside) and looks_like_name(
                    doc[closing + 1].text
                ):
                    yield opening, closing
                break


def looks_like_name(text: str) -> bool:
    """Capitalised and not all capitals: "Nate", "LeBron", not "TE", "MAGA" or "S"."""
    return len(text) > 1 and text[0].isupper() and not text.isupper()


def _joins_names(doc: Doc, i: int) -> bool:
    if not 0 < i < len(doc) - 1 or doc[i - 1].whitespace_ or doc[i].whitespace_:
        return False
    return looks_like_name(doc[i - 1].text) and looks_like_name(doc[i + 1].text)


def noun_phrase_groups(words: Sequence[str], tags: Sequence[str], limit: int) -> list[list[tuple[int, int]]]:
    """Base noun phrases ending before token `limit`, grouped as `NP (of NP)*`.

    As in the reference, "a portrait of Madeline" counts as one noun phrase. Other words tagged IN
    ("President that Bush would ...", "like Obama") begin a phrase of their own.
    """
    groups: list[list[tuple[int, int]]] = []
    for start, end in base_noun_phrases(tags, limit):
        last = groups[-1][-1] if groups else None
        if last and start == last[1] + 1 and tags[last[1]] == PREPOSITION_TAG and words[last[1]] == "of":
            groups[-1].append((start, end))
        else:
            groups.append([(start, end)])
    return groups


def representative(doc: Doc, tags: Sequence[str], group: Sequence[tuple[int, int]]) -> NounPhrase:
    """The group's candidate antecedent: its first phrase that ends in a name ("Jesus" of "Jesus of
    Nazareth", "Madeline" of "a portrait of Madeline"), else its last phrase."""
    phrases = [NounPhrase(start, end, _name_start(doc, tags, start, end)) for start, end in group]
    return next((phrase for phrase in phrases if phrase.has_name), phrases[-1])


def _name_start(doc: Doc, tags: Sequence[str], start: int, end: int) -> int:
    """Start of the phrase's trailing run of capitalised proper nouns (== end when there is none)."""
    i = end
    while (
        i > start
        and tags[i - 1] in PROPER_NOUN_TAGS
        and (tags[i - 1] == NAME_HYPHEN_TAG or looks_like_name(doc[i - 1].text))
    ):
        i -= 1
    if i < end and tags[i] == NAME_HYPHEN_TAG:
        i += 1
    return i


class AntecedentFilter(ExtractStage[Sentence, Sentence]):
    """Applies the antecedent rules to a batch of sentences: the taggers run once per batch, and NER once
    per batch on the sentences that still may name two persons, in the modes that use it."""

    name = "antecedent"
    unit = "sentences"

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        config = context.config
        self.blocking = frozenset(config.blocking_pronouns) | frozenset(TARGET_PRONOUNS)
        # "score": every named phrase is a candidate person; the validity stage scores the pair.
        self.by_score = config.person_detection == "score"
        self.use_names = config.person_detection in ("names", "both")
        self.use_ner = config.person_detection in ("ner", "both", "score")
        self.only_two_phrases = config.antecedent_rule == "two_noun_phrases"
        self.lexicon = context.lexicon
        self.persons = PersonRule(context.lexicon, config.person_detection)
        self.pipeline = context.pipeline

    def run(self, items: Iterable[Sentence]) -> Iterator[Sentence]:
        located = [sentence for sentence in items if self._located(sentence)]
        tagged = self.pipeline.tag(sentence.span.as_doc() for sentence in located)
        with_two = []
        for sentence, doc in zip(located, tagged, strict=True):
            sentence.doc = doc
            phrases = self.noun_phrases(doc, sentence.target)  # type: ignore[arg-type]
            if isinstance(phrases, str):
                self.count(phrases)
            else:
                with_two.append((doc, sentence, phrases))
        if self.use_ner:
            self.pipeline.recognise_entities(doc for doc, _, _ in with_two)
        for doc, sentence, phrases in with_two:
            if self.use_ner:
                phrases = split_on_persons(doc, phrases)
            chosen = self.choose(doc, sentence.target, phrases)  # type: ignore[arg-type]
            if self.count(chosen if isinstance(chosen, str) else None):
                sentence.antecedents = chosen  # type: ignore[assignment]
                yield sentence

    def _located(self, sentence: Sentence) -> bool:
        found = locate_target(sentence.words, sentence.connectives, self.blocking)
        if isinstance(found, str):
            self.count(found)
            return False
        if not self.only_two_phrases and not self._may_name_two(sentence, found):
            self.count("fewer_than_two_persons")
            return False
        sentence.target = found
        return True

    @staticmethod
    def _may_name_two(sentence: Sentence, target: Target) -> bool:
        """At least two words before the connective look like names. Every phrase with a name has such a
        word (a name run is of words that look like names, plus hyphens and quotes between them), so
        with fewer the tagger would run for nothing: `noun_phrases` would find fewer than two persons.
        Two in three of the sentences that would be tagged are settled here (3,090 of 4,811 in the 1M
        sample)."""
        words = sentence.span[: target.connective.start]
        return sum(looks_like_name(token.text) for token in words) >= 2

    def noun_phrases(self, doc: Doc, target: Target) -> list[NounPhrase] | str:
        """The minimal noun phrases before the connective if they can still hold two persons, else why not."""
        tags = corrected_tags(doc, self.lexicon)
        groups = noun_phrase_groups([token.lower_ for token in doc], tags, target.connective.start)
        phrases = [representative(doc, tags, group) for group in groups]
        named = sum(phrase.has_name for phrase in phrases)
        if self.only_two_phrases and len(phrases) != 2:
            return "fewer_than_two_noun_phrases" if len(phrases) < 2 else "more_than_two_noun_phrases"
        if named < 2:
            return "fewer_than_two_persons"
        if named > 2 and self.use_names and not self.use_ner:
            return "more_than_two_persons"
        return phrases

    def choose(
        self, doc: Doc, target: Target, phrases: Sequence[NounPhrase]
    ) -> tuple[NounPhrase, NounPhrase] | str:
        """The two person phrases if they are the only names before the connective (another name may be a
        person the rules missed, or tell the pronoun's referent), distinct, and their repeated names
        unambiguous; else the reason."""
        pronoun = doc[target.pronoun]
        if pronoun.text[0].isupper() and not is_sentence_initial(doc, target.pronoun):
            # "Him", "His" inside a sentence: a reverential pronoun, most often for God, not a named person.
            return "capitalised_pronoun"
        persons = self._persons(doc, phrases)
        if len(persons) != 2:
            return "fewer_than_two_persons" if len(persons) < 2 else "more_than_two_persons"
        first, second = persons
        if not self.by_score and any(phrase.has_name and phrase not in persons for phrase in phrases):
            return "other_name_before_connective"
        if doc[first.end - 1].lower_ == doc[second.end - 1].lower_:
            return "identical_antecedents"
        if self._shared_name_repeated(doc, target, persons):
            return "ambiguous_repeated_name"
        if (self.use_names or self.by_score) and self._agrees_with_neither(doc, target, persons):
            return "pronoun_agrees_with_neither"
        return first, second

    def _persons(self, doc: Doc, phrases: Sequence[NounPhrase]) -> list[NounPhrase]:
        """The phrases that name persons. By score: two names are the candidates whatever they name (the
        score judges them); among more, those the person rule calls persons."""
        named = [phrase for phrase in phrases if phrase.has_name]
        if self.by_score and len(named) == 2:
            return named
        return [phrase for phrase in named if self.persons.is_person(doc, phrase)]

    def _shared_name_repeated(self, doc: Doc, target: Target, persons: Sequence[NounPhrase]) -> bool:
        """A word of both names ("Tom" of "Tom Hanks" and "Tom Brady") named again after the
        connective: the perturbation could not tell whose mention it is. Other repeated names are
        replaced along with their antecedent."""
        first, second = ({doc[i].text for i in range(p.name_start, p.end)} for p in persons)
        shared = {word for word in first & second if looks_like_name(word)}
        return any(token.text in shared for token in doc[target.connective.end :])

    def _agrees_with_neither(self, doc: Doc, target: Target, persons: Sequence[NounPhrase]) -> bool:
        """The pronoun can mean neither person: both bear names known to be of the other gender ("she"
        after two men's names), or a third person named between the connective and the pronoun has the
        pronoun's gender and neither of the two is known to have it."""
        pronoun_gender = TARGET_PRONOUNS[doc[target.pronoun].lower_]
        genders = [self.persons.gender(doc, person) for person in persons]
        if all(gender is not None and gender != pronoun_gender for gender in genders):
            return True
        return pronoun_gender not in genders and pronoun_gender in self._genders_before_pronoun(doc, target)

    def _genders_before_pronoun(self, doc: Doc, target: Target) -> set[str | None]:
        """The known genders of people named after the connective and before the pronoun."""
        tags = [token.tag_ for token in doc]
        genders: set[str | None] = set()
        for start, end in base_noun_phrases(tags, target.pronoun):
            phrase = NounPhrase(start, end, _name_start(doc, tags, start, end))
            if start >= target.connective.end and phrase.has_name and self.persons.is_person(doc, phrase):
                genders.add(self.persons.gender(doc, phrase))
        return genders
