"""The validity score of a candidate: how likely its two antecedent spans are two people its pronoun can
refer to. It is the mean of two halves' probabilities:
- a gradient-boosted model over what the rules know about each span (the model's entity label of the
  whole span, name lists and their frequencies, Reddit entity priors, determiners, prepositions, quotes
  and possessives around the span, titles, capitalisation, gender agreement) and about the sentence
  (other names around the pronoun, where the spans stand);
- all-MiniLM-L6-v2 fine-tuned on the same judged candidates (knowref60k.extract.span_model).

Both are trained on the hand-judged gold set (`tools/scorer/finetune.py`, then `tools/scorer/build.py`)
and ship as files in `data/scorer/`: the trees as JSON, walked here with numpy, the encoder's adapters
as safetensors, run with numpy; extraction needs no machine-learning library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from spacy.tokens import Doc

from knowref60k.core.config import TARGET_PRONOUNS
from knowref60k.core.errors import UserError
from knowref60k.core.exact_math import logistic, product
from knowref60k.core.model_file import read_model
from knowref60k.core.names import NameLexicon, census_first_names, ssa_name_counts
from knowref60k.core.paths import VALIDITY_MODEL
from knowref60k.extract.persons import (
    NAME_SHAPE,
    NUMERIC_TYPES,
    PLACE_PREPOSITIONS,
    QUOTES,
    TITLES,
    PersonRule,
    is_sentence_initial,
)
from knowref60k.extract.records import NounPhrase, Target, character_span
from knowref60k.extract.span_model import SpanModel, mapped_folder, shared_span_model

Array = NDArray[Any]
ENTITY_GROUPS = {
    "person": {"PERSON"},
    "organisation": {"ORG"},
    "place": {"GPE", "LOC", "FAC"},
    "work": {"WORK_OF_ART", "PRODUCT", "EVENT", "LAW", "LANGUAGE"},
    "group": {"NORP"},
    "numeric": set(NUMERIC_TYPES),
}
SPAN_FEATURES = (
    "rule_person",
    "known_first_name",
    "world_name",
    "unknown_name_shape",
    "all_common_words",
    "first_common_word",
    "log_babies",
    "census_name",
    "prior_person",
    "prior_other",
    *(f"entity_{group}" for group in ENTITY_GROUPS),
    "entity_none",
    "determined",
    "quoted",
    "titled",
    "title_only",
    "after_place_preposition",
    "after_of",
    "possessive_after",
    "sentence_initial",
    "name_words",
    "phrase_words",
    "all_proper_nouns",
    "gender_agrees",
    "gender_disagrees",
)
SENTENCE_FEATURES = (
    "pronoun_possessive",
    "names_after_connective",
    "capitalised_before_connective",
    "words_between_spans",
    "sentence_words",
    "connective_is_comma",
    "same_first_word",
    # People the entity recogniser finds outside both spans: the pronoun may refer to a third person
    # (the most common error that passed; the other features tried for it are in docs/decisions.md,
    # "The validity score").
    "persons_elsewhere",
)
# What the pipeline's own contextual token vectors (spaCy's tok2vec, `doc.tensor`) say of each span:
# their mean over the span, projected on the principal directions the build found in the tuning spans.
CONTEXT_DIMENSIONS = 8
FEATURES = (
    *(f"a1_{name}" for name in SPAN_FEATURES),
    *(f"a2_{name}" for name in SPAN_FEATURES),
    *SENTENCE_FEATURES,
    *(f"{span}_context_{i}" for span in ("a1", "a2") for i in range(CONTEXT_DIMENSIONS)),
)
BASE_FEATURES = len(FEATURES) - 2 * CONTEXT_DIMENSIONS


class CandidateFeatures:
    """Turns a candidate (doc, target, the two spans) into the model's feature vector."""

    def __init__(self, lexicon: NameLexicon) -> None:
        self.lexicon = lexicon
        self.rule = PersonRule(lexicon, "both")
        self.babies = ssa_name_counts()
        self.census = census_first_names()

    def vector(self, doc: Doc, target: Target, spans: tuple[NounPhrase, NounPhrase]) -> list[float]:
        """The features before the context projection: the rules' view of both spans and the sentence."""
        gender = TARGET_PRONOUNS[doc[target.pronoun].lower_]
        first, second = spans
        return [
            *self.span(doc, first, gender),
            *self.span(doc, second, gender),
            *self.sentence(doc, target, first, second),
        ]

    @staticmethod
    def context(doc: Doc, spans: tuple[NounPhrase, NounPhrase]) -> list[Array]:
        """The mean of the pipeline's contextual token vectors over each span's name."""
        return [np.asarray(doc.tensor[p.name_start : p.end].mean(axis=0), dtype=np.float64) for p in spans]

    def span(self, doc: Doc, phrase: NounPhrase, pronoun_gender: str) -> list[float]:
        first = doc[phrase.name_start]
        words = [doc[i].text for i in range(phrase.name_start, phrase.end)]
        types = {doc[i].ent_type_ for i in range(phrase.name_start, phrase.end)} - {""}
        person, other = self.lexicon.entity_priors.get(first.text, (0, 0))
        gender = self.rule.gender(doc, phrase)
        before = doc[phrase.start - 1].lower_ if phrase.start > 0 else ""
        after = doc[phrase.end].text if phrase.end < len(doc) else ""
        values = [
            self.rule.is_person(doc, phrase),
            self.lexicon.is_first_name(first.text),
            self.lexicon.is_world_name(first.text),
            all(NAME_SHAPE.match(w) and not self.lexicon.is_common_word(w) for w in words),
            all(self.lexicon.is_common_word(w) for w in words),
            self.lexicon.is_common_word(first.text),
            math.log1p(self.babies.get(first.text.capitalize(), 0)),
            first.text.capitalize() in self.census,
            math.log1p(person),
            math.log1p(other),
            *(bool(types & group) for group in ENTITY_GROUPS.values()),
            not types,
            phrase.start < phrase.name_start and doc[phrase.start].tag_ in ("DT", "PRP$"),
            sum(1 for token in doc[: phrase.name_start] if token.text in QUOTES) % 2 == 1,
            first.lower_ in TITLES,
            all(doc[i].lower_ in TITLES for i in range(phrase.name_start, phrase.end)),
            before in PLACE_PREPOSITIONS,
            before == "of",
            after in ("'s", "’s", "'"),
            is_sentence_initial(doc, phrase.name_start),
            len(words),
            phrase.end - phrase.start,
            all(doc[i].tag_ in ("NNP", "NNPS") for i in range(phrase.name_start, phrase.end)),
            gender == pronoun_gender,
            gender is not None and gender != pronoun_gender,
        ]
        return [float(value) for value in values]

    @staticmethod
    def sentence(doc: Doc, target: Target, first: NounPhrase, second: NounPhrase) -> list[float]:
        between = doc[target.connective.end : target.pronoun]
        before = doc[: target.connective.start]
        spans = {*range(first.start, first.end), *range(second.start, second.end)}
        elsewhere = [e for e in doc.ents if e.label_ == "PERSON" and not spans & set(range(e.start, e.end))]
        values = [
            doc[target.pronoun].lower_ in ("his", "hers"),
            sum(1 for token in between if _capitalised(token.text) and token.i > 0),
            sum(1 for token in before if _capitalised(token.text)),
            second.start - first.end,
            len(doc),
            doc[target.connective.start].text == ",",
            doc[first.name_start].lower_ == doc[second.name_start].lower_,
            len(elsewhere),
        ]
        return [float(value) for value in values]


def _capitalised(text: str) -> bool:
    return len(text) > 1 and text[0].isupper() and not text.isupper()


def project(vectors: Array, mean: Array, components: Array) -> Array:
    """Context vectors (one per row) on the principal directions, the same on every processor."""
    return product(vectors - mean, np.asarray(components).T, np.float64)


def combine(trees: Array, encoder: Array) -> Array:
    """The validity score from its two halves' probabilities: their mean."""
    return np.asarray((trees + encoder) / 2)


@dataclass(frozen=True)
class TreeEnsemble:
    """Gradient-boosted trees on numerical features, as scikit-learn's HistGradientBoostingClassifier
    grows them: a sample goes left when its value is at most the threshold (missing values as the node
    says); the score is the logistic of the baseline plus every tree's leaf value."""

    features: tuple[str, ...]
    baseline: float
    trees: tuple[dict[str, Array], ...]
    training: dict[str, Any]
    # The context vectors' mean and principal directions (CONTEXT_DIMENSIONS x the vectors' width).
    mean: Array
    components: Array

    @classmethod
    def load(cls, path: Path = VALIDITY_MODEL) -> TreeEnsemble:
        model = read_model(path)
        if tuple(model["features"]) != FEATURES:
            raise UserError(f"{path}: made for other features than this code computes; rebuild it")
        trees = tuple({key: np.asarray(values) for key, values in tree.items()} for tree in model["trees"])
        projection = model["projection"]
        return cls(
            tuple(model["features"]),
            float(model["baseline"]),
            trees,
            model.get("training", {}),
            np.asarray(projection["mean"]),
            np.asarray(projection["components"]),
        )

    def design(self, rows: Sequence[Sequence[float]], contexts: Sequence[Sequence[Array]]) -> Array:
        """The model's input: each row's base features, then both spans' projected context vectors."""
        base = np.asarray(rows, dtype=np.float64).reshape(len(rows), BASE_FEATURES)
        if contexts and len(contexts[0][0]) != len(self.mean):
            raise UserError(
                f"the validity model was built with another spaCy pipeline ({self.training.get('data')}); "
                "rebuild it with tools/scorer/build.py"
            )
        vectors = np.asarray(contexts, dtype=np.float64).reshape(2 * len(rows), len(self.mean))
        projected = project(vectors, self.mean, self.components)
        return np.hstack([base, projected.reshape(len(rows), 2 * CONTEXT_DIMENSIONS)])

    def score(self, matrix: Array) -> Array:
        """The probability of each row of a design matrix (see `design`)."""
        forest = self._forest
        raw = np.full(len(matrix), self.baseline)
        for values in forest.leaf_values(matrix).T:  # tree by tree, in the order the trees were grown
            raw += values
        return logistic(raw)

    @cached_property
    def _forest(self) -> Forest:
        return Forest.of(self.trees)


@dataclass(frozen=True)
class Forest:
    """All trees in arrays of one shape (trees x nodes), so that every row goes down every tree at once,
    a level per step: a chunk's few candidates then cost a few numpy calls per level of the deepest tree,
    not per tree. A leaf leads to itself, so a row that reached one stays there."""

    feature: Array
    threshold: Array
    missing_left: Array
    left: Array
    right: Array
    is_leaf: Array
    value: Array

    @classmethod
    def of(cls, trees: Sequence[dict[str, Array]]) -> Forest:
        nodes = max((len(tree["value"]) for tree in trees), default=1)

        def stacked(key: str, dtype: Any, fill: Any) -> Array:
            table = np.full((len(trees), nodes), fill, dtype=dtype)
            for row, tree in enumerate(trees):
                table[row, : len(tree[key])] = tree[key]
            return table

        is_leaf = stacked("is_leaf", bool, True)
        own = np.broadcast_to(np.arange(nodes), is_leaf.shape)
        return cls(
            np.where(is_leaf, 0, stacked("feature", np.int64, 0)),
            stacked("threshold", np.float64, 0.0),
            stacked("missing_left", bool, False),
            np.where(is_leaf, own, stacked("left", np.int64, 0)),
            np.where(is_leaf, own, stacked("right", np.int64, 0)),
            is_leaf,
            stacked("value", np.float64, 0.0),
        )

    def leaf_values(self, matrix: Array) -> Array:
        """The value of the leaf each row reaches in each tree (rows x trees)."""
        trees = np.arange(len(self.value))[None, :]
        rows = np.arange(len(matrix))[:, None]
        node: Array = np.zeros((len(matrix), len(self.value)), dtype=np.int64)
        while not self.is_leaf[trees, node].all():
            values = matrix[rows, self.feature[trees, node]]
            threshold = self.threshold[trees, node]
            left = np.where(np.isnan(values), self.missing_left[trees, node], values <= threshold)
            node = np.where(left, self.left[trees, node], self.right[trees, node])
        return np.asarray(self.value[trees, node])


def share_span_encoder(model_path: Path = VALIDITY_MODEL) -> None:
    """Before the workers start: cache the validity model's encoder, adapters merged, for them to map
    (once per machine and model; each worker would otherwise hold its own 90 MB copy)."""
    adapters = read_model(model_path)["training"]["span_model"]
    if not mapped_folder(adapters["sha256"]).is_dir():
        SpanModel(model_path.parent / adapters["file"], adapters["sha256"]).share()


class ValidityScorer:
    """Features and model together, loaded once per worker."""

    def __init__(self, lexicon: NameLexicon, model_path: Path = VALIDITY_MODEL) -> None:
        self.features = CandidateFeatures(lexicon)
        self.model_path = model_path

    @cached_property
    def model(self) -> TreeEnsemble:
        return TreeEnsemble.load(self.model_path)

    @cached_property
    def span_model(self) -> SpanModel:
        adapters = self.model.training["span_model"]
        return shared_span_model(self.model_path.parent / adapters["file"], adapters["sha256"])

    def scores(self, candidates: Sequence[tuple[Doc, Target, tuple[NounPhrase, NounPhrase]]]) -> list[float]:
        if not candidates:
            return []
        rows = [self.features.vector(doc, target, spans) for doc, target, spans in candidates]
        contexts = [self.features.context(doc, spans) for doc, _, spans in candidates]
        trees = self.model.score(self.model.design(rows, contexts))
        spans = [
            (
                doc.text,
                [character_span(doc, span.name_start, span.end) for span in pair]
                + [character_span(doc, target.pronoun, target.pronoun + 1)],
            )
            for doc, target, pair in candidates
        ]
        scores = combine(trees, self.span_model.probabilities(spans))
        return [round(float(score), 6) for score in scores]
