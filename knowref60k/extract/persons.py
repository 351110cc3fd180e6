"""Whether a capitalised noun phrase names a person, from every signal at hand: the entity type the
model gives the phrase in context, name lists of many countries, how a word is written on Reddit, and
the phrase's shape (a determiner, the start of a sentence)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from spacy.tokens import Doc

from knowref60k.core.names import NameLexicon, census_first_names, ssa_name_counts
from knowref60k.extract.records import NounPhrase

# Words that stand before a name as part of it ("President Obama", "Uncle Dana"), and alone name no one.
TITLES = frozenset(
    """mr mr. mrs mrs. ms ms. miss dr dr. doctor prof prof. professor sir dame lord lady king queen prince
    princess duke duchess emperor empress president senator governor mayor judge justice general captain
    capt capt. colonel major lieutenant sergeant sgt sgt. officer agent detective coach pope saint st st.
    father mother brother sister uncle aunt auntie grandma grandpa granny cousin dad mom mum papa mama
    master lady chief commander admiral pastor reverend rev rev. rabbi imam""".split()
)
# A name no list has must look like one: capitalised words of lower-case letters ("Okafor", "Day-Lewis",
# "O'Neill"), not "PvZ", "SnooRoar" or "iPhone".
NAME_SHAPE = re.compile(r"^(?:[A-Z][a-z]*['’-])?[A-Z][a-z]+(?:-[A-Z][a-z]+)?$")
QUOTES = frozenset({'"', "“", "”"})
# A Census first name, or one the SSA counted this many babies with, outweighs the model's reading of it
# as an organisation or place in one sentence ("Julia" read as ORG) ...
STRONG_NAME_COUNT = 5_000
# ... unless the model reads the word as another kind of entity in most of its Reddit contexts
# (`data/names/person_priors.tsv`: "Houston", "London", "Marvel"), which only the most common names
# outweigh (the small model calls "Amanda" ORG more often than PERSON).
COMMON_NAME_COUNT = 100_000
PRIOR_EVIDENCE = 10
PRIOR_RATIO = 3.0
# After these a name the model does not call a person is most often a place or a work ("in Numenor",
# "on Thanedd", "at Arena").
PLACE_PREPOSITIONS = frozenset({"in", "at", "into", "onto", "on", "near", "from", "inside"})
# Entity types of numbers, dates and times: whatever the name lists say, such a word names no one.
NUMERIC_TYPES = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
# Share of a name's bearers that must be of one gender before the name counts as that gender's.
GENDER_CERTAINTY = 0.95
SENTENCE_OPENERS = frozenset({'"', "'", ":", "(", "-", "*"})


def is_sentence_initial(doc: Doc, i: int) -> bool:
    """Whether token i is capitalised by position: the sentence's first word, or after a quote or colon."""
    return i == 0 or doc[i - 1].text in SENTENCE_OPENERS


class PersonRule:
    """Decides which noun phrases name a person. Modes: "names" (name lists only), "ner" (the model's
    PERSON label only), "both" (all signals)."""

    def __init__(self, lexicon: NameLexicon, mode: str) -> None:
        self.lexicon = lexicon
        self.babies = ssa_name_counts()
        self.census_names = census_first_names()
        self.use_names = mode in ("names", "both")
        self.use_ner = mode in ("ner", "both")

    def known_name(self, doc: Doc, phrase: NounPhrase, world: bool = False, popular: bool = False) -> bool:
        """Starts with a known first name (US lists; also the world lists when `world`). A name that is
        also a common word must be on the US lists ("Will", not "Read"), and at the start of a sentence,
        where every word is capitalised, a popular one ("John", "Mark"; not "Man") or tagged a proper
        noun by the model."""
        first = doc[phrase.name_start]
        text = first.text
        if popular and not self._outweighs_entity_type(text):
            return False
        if not (self.lexicon.is_first_name(text) or (world and self.lexicon.is_world_name(text))):
            return False
        if not self.lexicon.is_common_word(text):
            return True
        if not self.lexicon.is_first_name(text):
            return False
        if is_sentence_initial(doc, phrase.name_start):
            return self.lexicon.is_popular_first_name(text) or first.tag_ == "NNP"
        return True

    def _outweighs_entity_type(self, text: str) -> bool:
        """Whether a first name is common enough to overrule the model's reading of it as a place or
        organisation in this sentence."""
        name = text.capitalize()
        babies = self.babies.get(name, 0)
        if babies >= COMMON_NAME_COUNT:
            return True
        known = babies >= STRONG_NAME_COUNT or name in self.census_names
        return known and not self.lexicon.mostly_other_entity(text, PRIOR_EVIDENCE, PRIOR_RATIO)

    def entity_types(self, doc: Doc, phrase: NounPhrase) -> set[str]:
        return {doc[i].ent_type_ for i in range(phrase.name_start, phrase.end)} - {""}

    def given_name_token(self, doc: Doc, phrase: NounPhrase) -> int | None:
        """The first word of the name after its titles, None when the phrase is titles only ("General",
        "Dad")."""
        i = phrase.name_start
        while i < phrase.end and doc[i].lower_ in TITLES:
            i += 1
        return i if i < phrase.end else None

    def is_person(self, doc: Doc, phrase: NounPhrase) -> bool:
        """In "both" mode, the first signal that speaks decides:
        1. no person: titles only ("General"), a determiner before the name ("the Avengers"), inside
           quotes (a title), or a number or date entity ("September");
        2. a person: a first name common enough to outweigh the model's reading of this sentence;
        3. the model's PERSON label, unless every word of the name is a common word ("Arena");
        4. no person: any other entity type, unless it is a one-word label the model does not give the
           word in most of its Reddit contexts; after "in", "at", "on" ... (a place or a work);
        5. a person: a first name of the US or world lists, or a word no list has that looks like a name
           and is no common word ("Okafor")."""
        if not self.use_ner:
            return self.known_name(doc, phrase)
        types = self.entity_types(doc, phrase)
        if not self.use_names:
            return "PERSON" in types
        given = self.given_name_token(doc, phrase)
        if given is None or _determined(doc, phrase) or _quoted(doc, phrase):
            return False
        name = NounPhrase(phrase.start, phrase.end, given)
        if types & NUMERIC_TYPES:
            return False
        if self.known_name(doc, name, popular=True):
            return True
        if "PERSON" in types:
            # The model calls some plain words persons ("Arena"); "Vin Diesel" keeps its first name, and a
            # given name that is also a word ("Cam") counts where its capital is not due to position.
            if self.lexicon.is_first_name(doc[given].text) and not is_sentence_initial(doc, given):
                return True
            return not all(self.lexicon.is_common_word(doc[i].text) for i in range(given, phrase.end))
        if types and not self._unreliable_type(doc, name):
            return False
        if phrase.start > 0 and doc[phrase.start - 1].lower_ in PLACE_PREPOSITIONS:
            return False
        return self.known_name(doc, name, world=True) or self._unknown_name(doc, name)

    def _unreliable_type(self, doc: Doc, name: NounPhrase) -> bool:
        """The small model labels lone names in comments ORG or GPE at random ("Eli", "Novak", "Becca"):
        a one-word non-person entity is trusted only when the model reads the word so in most of its
        Reddit contexts too."""
        if name.end - name.name_start != 1:
            return False
        entity = doc[name.name_start]
        if entity.ent_iob_ != "B" or (name.end < len(doc) and doc[name.end].ent_iob_ == "I"):
            return False
        return not self.lexicon.mostly_other_entity(entity.text, PRIOR_EVIDENCE, PRIOR_RATIO)

    def _unknown_name(self, doc: Doc, phrase: NounPhrase) -> bool:
        """A name no list has ("Okafor"): no word of it a common word; at the start of a sentence, where
        every word is capitalised, the model must also tag it a proper noun."""
        if is_sentence_initial(doc, phrase.name_start) and doc[phrase.name_start].tag_ != "NNP":
            return False
        words = [doc[i].text for i in range(phrase.name_start, phrase.end)]
        return all(NAME_SHAPE.match(word) and not self.lexicon.is_common_word(word) for word in words)

    def gender(self, doc: Doc, phrase: NounPhrase) -> str | None:
        """The gender the phrase's first name is known for, if any."""
        return self.lexicon.gender(doc[phrase.name_start].text, GENDER_CERTAINTY)


def _determined(doc: Doc, phrase: NounPhrase) -> bool:
    """A name right after a determiner or possessive, adjectives aside ("the Avengers", "my Dovahkiin",
    "the new Conan"), names a thing or a role; "my friend John" still names John."""
    if phrase.start == phrase.name_start or doc[phrase.start].tag_ not in ("DT", "PRP$"):
        return False
    return all(doc[i].tag_.startswith("JJ") for i in range(phrase.start + 1, phrase.name_start))


def _quoted(doc: Doc, phrase: NounPhrase) -> bool:
    """Inside quotation marks: a title ("From Dusk til Dawn", "King in the North"), not a person."""
    before = sum(1 for token in doc[: phrase.name_start] if token.text in QUOTES)
    return before % 2 == 1


def split_on_persons(doc: Doc, phrases: Sequence[NounPhrase]) -> list[NounPhrase]:
    """A run of capitalised words that the model reads as two or more persons ("Carl shot Lori", with
    "shot" taken for a name) becomes one phrase per person."""
    result: list[NounPhrase] = []
    for phrase in phrases:
        persons = [
            ent
            for ent in doc.ents
            if ent.label_ == "PERSON" and phrase.name_start <= ent.start and ent.end <= phrase.end
        ]
        if len(persons) < 2:
            result.append(phrase)
            continue
        result.extend(NounPhrase(ent.start, ent.end, ent.start) for ent in persons)
    return result
