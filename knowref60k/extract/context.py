"""What the extraction stages share within a worker: configuration, the spaCy pipeline, word lists."""

from __future__ import annotations

from functools import cached_property
from typing import TypeVar

from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.core.names import (
    NameLexicon,
    entity_priors,
    female_shares,
    known_first_names,
    popular_first_names,
    reddit_common_words,
    world_first_names,
)
from knowref60k.core.stage import Stage
from knowref60k.extract.cleaning import load_bot_names
from knowref60k.extract.nlp import Pipeline, WordFinder, pronoun_forms, shared_pipeline
from knowref60k.extract.scorer import ValidityScorer

# A first name that is also a common word counts at a sentence's start only if this popular (percent).
POPULAR_NAME_PERCENT = 0.01


class ExtractContext:
    """Built once per worker process; what a stage needs is loaded the first time it asks."""

    def __init__(self, config: ExtractConfig, model_name: str) -> None:
        self.config = config
        self.model_name = model_name

    @cached_property
    def pipeline(self) -> Pipeline:
        return shared_pipeline(self.model_name)

    @cached_property
    def bot_names(self) -> frozenset[str]:
        return load_bot_names()

    @cached_property
    def target_pronouns(self) -> WordFinder:
        return WordFinder(pronoun_forms(self.pipeline.nlp, TARGET_PRONOUNS))

    @cached_property
    def validity_scorer(self) -> ValidityScorer:
        return ValidityScorer(self.lexicon)

    @cached_property
    def lexicon(self) -> NameLexicon:
        return NameLexicon(
            first_names=known_first_names(self.config.ssa_min_count),
            popular_first_names=popular_first_names(POPULAR_NAME_PERCENT),
            common_words=reddit_common_words(),
            world_names=frozenset(world_first_names()),
            female_share=female_shares(),
            entity_priors=entity_priors(),
        )


In = TypeVar("In")
Out = TypeVar("Out")


class ExtractStage(Stage[In, Out]):
    """An extraction stage. The pipeline builds every one with its worker's `ExtractContext` (the spaCy
    pipeline and word lists load once per worker, not once per stage and chunk); a stage takes from it,
    in its own constructor, only what it needs."""

    def __init__(self, context: ExtractContext) -> None:
        super().__init__()
