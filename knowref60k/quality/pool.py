"""The pool of sentences the gold set judges: extraction with the person rule replaced by a deliberately
loose one, so that what any person rule emits on the same input is in the pool."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from spacy.tokens import Doc

from knowref60k.core.config import load_config
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.extractor import Extractor
from knowref60k.extract.persons import is_sentence_initial
from knowref60k.extract.pipeline import STAGES, StageClass
from knowref60k.extract.records import NounPhrase, Target
from knowref60k.extract.stages.antecedents import AntecedentFilter, looks_like_name
from knowref60k.extract.stages.score import ValidityScore

POOL_FIELDS = (
    "candidate_id",
    "source_file",
    "line_number",
    "comment_id",
    "subreddit",
    "sentence",
    "connective",
    "connective_start",
    "connective_end",
    "pronoun",
    "pronoun_start",
    "pronoun_end",
)


class AnyTwoNames(AntecedentFilter):
    """The pool's antecedent rule: at least two runs of capitalised words before the connective, whatever
    they name. A word capitalised by its position counts only if it may be a name (tagged a proper noun,
    a first name, or no common word). Person rules choose among such runs, so what they emit is in the pool.
    No entity labels are needed, so NER does not run.
    """

    def __init__(self, context: ExtractContext) -> None:
        super().__init__(context)
        self.use_ner = False

    def noun_phrases(self, doc: Doc, target: Target) -> list[NounPhrase] | str:
        runs: list[NounPhrase] = []
        in_run = False
        for i in range(target.connective.start):
            if not looks_like_name(doc[i].text):
                in_run = False
            elif not in_run and self._may_be_name(doc, i):
                runs.append(NounPhrase(i, i + 1, i))
                in_run = True
        return runs if len(runs) >= 2 else "fewer_than_two_capitalised_runs"

    def _may_be_name(self, doc: Doc, i: int) -> bool:
        text = doc[i].text
        return (
            not is_sentence_initial(doc, i)
            or doc[i].tag_ in ("NNP", "NNPS")
            or self.lexicon.is_first_name(text)
            or not self.lexicon.is_common_word(text)
        )

    def choose(
        self, doc: Doc, target: Target, phrases: Sequence[NounPhrase]
    ) -> tuple[NounPhrase, NounPhrase] | str:
        return phrases[0], phrases[1]


# The pool needs no validity score: it judges what any person rule could emit.
POOL_STAGES: tuple[StageClass, ...] = tuple(
    AnyTwoNames if stage is AntecedentFilter else stage for stage in STAGES if stage is not ValidityScore
)


def build_pool(
    inputs: Sequence[Path], workers: int = 2, model: str | None = None, config_path: Path | None = None
) -> list[dict[str, Any]]:
    """Every pool sentence of the inputs, in input order; a config file can widen the structure (more
    connectives, longer sentences) beyond the default's."""
    rows: list[dict[str, Any]] = []
    config = load_config(config_path, model=model, person_detection="both")
    with (
        tempfile.TemporaryDirectory() as scratch,
        Extractor(config, workers, stages=POOL_STAGES) as extractor,
    ):
        for path in inputs:
            report = extractor.extract_file(path, Path(scratch))
            rows.extend(
                {field: row[field] for field in POOL_FIELDS}
                for row in pq.read_table(report.rows_path).to_pylist()
            )
    return rows
