"""Digests of every step of the validity score on a fixed slice of the gold set, so that a result that
depends on the processor is caught on the machine that has it, and the message names the step where the
difference enters (`tests/test_same_scores_everywhere.py`; `tools/scorer/score_digests.py` writes
the recorded ones and runs them under other BLAS kernels)."""

from __future__ import annotations

import hashlib
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from knowref60k.extract.context import ExtractContext
from knowref60k.extract.scorer import combine
from knowref60k.extract.span_model import candidate_spans
from knowref60k.quality.gold import GoldItem
from knowref60k.quality.scorer_data import TRAINING_CONFIG, parse_examples

# In the order the score computes them: the first that differs is where a difference enters.
STEPS = (
    "spaCy's tags and entities",
    "spaCy's contextual vectors",
    "the trees' features",
    "the trees' probabilities",
    "the encoder's probabilities",
    "the validity score (6 digits)",
)
PER_PART = 150  # sentences of each part of the gold set, the first in the file
# numpy's AVX-512 code (`NPY_DISABLE_CPU_FEATURES` turns it off), which rounds some float32 and float64
# functions differently from its AVX2 code.
NUMPY_AVX512 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"


def digest_items(items: Sequence[GoldItem], per_part: int = PER_PART) -> list[GoldItem]:
    """The slice the digests are made of: the first `per_part` sentences of each part, in file order."""
    parts: dict[str, list[GoldItem]] = {}
    for item in items:
        if len(parts.setdefault(item.split, [])) < per_part:
            parts[item.split].append(item)
    return [item for part in sorted(parts) for item in parts[part]]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def score_digests(items: Sequence[GoldItem], model_name: str) -> dict[str, Any]:
    """Each step's digest on `items` (their loose-rule candidates for the steps after spaCy's), computed
    afresh, how many candidates they made, and what decided this machine's arithmetic (`processor`)."""
    context = ExtractContext(TRAINING_CONFIG, model_name)
    pipeline = context.pipeline
    with pipeline.chunk_zone():
        docs = list(pipeline.tag(pipeline.nlp.make_doc(item.sentence) for item in items))
        pipeline.recognise_entities(docs)
        labels = [[[t.tag_ for t in doc], [[e.start, e.end, e.label_] for e in doc.ents]] for doc in docs]
        tensor = np.concatenate([doc.tensor for doc in docs]).astype(np.float32)
    found = parse_examples(items, model_name)
    scorer = context.validity_scorer
    design = scorer.model.design([e.features for e in found], [e.context for e in found])
    trees = scorer.model.score(design)
    encoder = scorer.span_model.probabilities([(e.row["sentence"], candidate_spans(e.row)) for e in found])
    scores = np.round(combine(trees, encoder), 6)
    arrays = (tensor, design, trees, encoder, scores)
    digests = [_sha256(orjson.dumps(labels)), *(_sha256(np.ascontiguousarray(a).tobytes()) for a in arrays)]
    steps = dict(zip(STEPS, digests, strict=True))
    return {"sentences": len(items), "candidates": len(found), "digests": steps, "processor": processor()}


def differences(found: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """The steps whose digest is not the recorded one, in the score's order."""
    return [step for step in STEPS if found["digests"].get(step) != recorded["digests"].get(step)]


def processor() -> str:
    """What decides the last bits of a product here: the processor, the BLAS libraries' kernels and the
    SIMD code numpy chose for its float32 power (the one numpy function the score's spaCy layers used)."""
    from numpy.lib.introspect import opt_func_info
    from threadpoolctl import threadpool_info

    kernels = ", ".join(
        f"{pool.get('internal_api')} {pool.get('version')} ({pool.get('architecture')})"
        for pool in threadpool_info()
    )
    power = opt_func_info(func_name="^power$", signature="float32")["power"]
    numpy_code = next(iter(power.values()))["current"]
    return f"{cpu_model()}; {kernels}; numpy {np.__version__} {numpy_code}"


def cpu_model() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else the machine's architecture."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.machine()
