"""spaCy's analyses remembered across the settings of one process: what is recalled is what the
pipeline computes afresh, alone or in any batch."""

from __future__ import annotations

import numpy as np
import pytest
from spacy.attrs import ENT_IOB, ENT_TYPE, TAG
from spacy.tokens import Doc

from knowref60k.extract.nlp import Pipeline
from knowref60k.extract.pipeline import CandidateExtractor

SENTENCES = (
    "Maria told Anna Schmidt that she would visit Berlin in May.",
    "John Miller hit Bill because he was angry at Microsoft.",
    "Sue met Tom in Paris after he called her.",
)


def analysed(pipeline: Pipeline, texts: tuple[str, ...]) -> list[Doc]:
    docs = list(pipeline.tag(pipeline.nlp.make_doc(text) for text in texts))
    pipeline.recognise_entities(docs)
    return docs


def analysis(doc: Doc) -> tuple[list[list[int]], list[list[float]]]:
    return doc.to_array([TAG, ENT_IOB, ENT_TYPE]).tolist(), np.asarray(doc.tensor).tolist()


@pytest.mark.integration
def test_a_recalled_analysis_is_the_one_computed_alone(extractor: CandidateExtractor) -> None:
    pipeline = extractor.pipeline
    alone = {text: analysis(analysed(pipeline, (text,))[0]) for text in SENTENCES}
    assert any(entity_type for _, _, entity_type in alone[SENTENCES[0]][0])  # entities were found
    with pipeline.remembering() as remembered:
        first = analysed(pipeline, SENTENCES[:2])
        second = analysed(pipeline, SENTENCES[1:])
        assert remembered.recalled == 2  # the second sentence's tags and entities
        with pipeline.remembering() as inner:
            assert inner is remembered
    assert pipeline.remembered is None
    for doc in (*first, *second):
        assert analysis(doc) == alone[doc.text], doc.text


@pytest.mark.integration
def test_the_least_recently_asked_for_is_forgotten_first(extractor: CandidateExtractor) -> None:
    from knowref60k.extract.remembered import RememberedAnalyses

    pipeline = extractor.pipeline
    with pipeline.remembering():
        pipeline.remembered = RememberedAnalyses(limit=2)
        for text in (SENTENCES[0], SENTENCES[1], SENTENCES[0], SENTENCES[2]):
            analysed(pipeline, (text,))
        recalled = pipeline.remembered.recalled
        analysed(pipeline, (SENTENCES[0],))  # asked for again before the third came: kept
        assert pipeline.remembered.recalled == recalled + 2
        analysed(pipeline, (SENTENCES[1],))  # forgotten when the third came
        assert pipeline.remembered.recalled == recalled + 2
