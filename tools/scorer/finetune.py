"""Fine-tune all-MiniLM-L6-v2 with low-rank adapters as the validity score's second half, on the tuning
part of the gold set, and write the adapters and the out-of-fold scores the operating points need.

    .venv-eval/bin/python tools/scorer/finetune.py [--final-only | --slice-only] [--out-dir data/scorer]

Runs in the model-evaluation environment (`make setup-eval`: torch CPU and transformers), about 20
minutes on 2 cores: 5 fits grouped by comment for the out-of-fold scores, then one on the whole tuning
part, then the slice check. `--final-only` runs only the whole fit (what `make rebuild-check` compares
with the shipped adapters); `--slice-only` only the slice check, the same fit on the first tuning items
scored on the first held-back ones, in about a minute (what the test suite compares with the shipped
`span_slice_check.json`). Seeded; no held-back item is trained on. Then run `tools/scorer/build.py`, which
fits the trees and picks the operating points on the mean of both halves' out-of-fold scores.

Adapters of rank 8 on every dense layer of the six transformer layers (the encoder's own weights stay
frozen, so what ships is small), a linear head on [CLS] and the mean vectors of both antecedents and the
pronoun, in the sentence with its spans marked (`span_model.marked`, as extraction reads it); 4 epochs,
AdamW at 5e-4, batches of 16, the valid class weighted by its rarity.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
import orjson
import torch

from knowref60k.core.config import ExtractConfig
from knowref60k.core.encoder import MiniLM
from knowref60k.core.paths import SPAN_ADAPTER, SPAN_OUT_OF_FOLD, SPAN_SLICE_CHECK
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.extract.span_model import MAX_TOKENS, SpanModel, candidate_spans, marked, span_masks
from knowref60k.quality.gold import GoldItem, load_gold
from knowref60k.quality.scorer_data import Example, examples
from knowref60k.quality.training import FOLDS, training_hash

PARAMETERS: dict[str, Any] = {
    "rank": 8, "epochs": 4, "learning_rate": 5e-4, "batch": 16, "weight_decay": 0.01, "seed": 0,
}  # fmt: skip
# The slice check: the whole fit's code on the first tuning items of the gold set (file order), its
# adapters scored by the numpy encoder extraction runs on the first held-back items.
SLICE = {"tuning_items": 400, "held_back_items": 300}
ADAPTED = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


class LowRank(torch.nn.Module):
    """A frozen dense layer plus a trainable update B @ A of low rank (B starts at zero)."""

    def __init__(self, base: torch.nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base
        self.lora_a = torch.nn.Parameter(torch.randn(rank, base.in_features) / base.in_features**0.5)
        self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T) @ self.lora_b.T


class SpanClassifier(torch.nn.Module):
    def __init__(self, base: MiniLM, rank: int) -> None:
        from transformers import BertConfig, BertModel

        super().__init__()
        self.encoder = BertModel(BertConfig(**base.config), add_pooling_layer=False)
        names = self.encoder.state_dict()  # the zip also holds the unused pooler and position ids
        self.encoder.load_state_dict({name: torch.from_numpy(base.weights[name].copy()) for name in names})
        self.encoder.requires_grad_(False)
        for layer in self.encoder.encoder.layer:
            for path in ADAPTED:
                parent_path, name = path.rsplit(".", 1)
                parent = layer.get_submodule(parent_path)
                setattr(parent, name, LowRank(getattr(parent, name), rank))
        self.dropout = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(4 * self.encoder.config.hidden_size, 1)

    def forward(self, ids: torch.Tensor, attention: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=ids, attention_mask=attention).last_hidden_state
        means = (masks @ hidden) / masks.sum(-1, keepdim=True).clamp(min=1.0)
        return self.head(self.dropout(torch.cat([hidden[:, 0], means.flatten(1)], -1))).squeeze(-1)


def tensors(base: MiniLM, batch: list[Example]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids, attention and span masks of a batch, tokenised as the numpy encoder does."""
    inputs = [marked(e.row["sentence"], candidate_spans(e.row)) for e in batch]
    encodings = base.tokenizer.encode_batch([text for text, _ in inputs])
    length = len(encodings[0].ids)
    pairs = zip(encodings, inputs, strict=True)
    masks = np.stack([span_masks(enc.offsets, spans, length) for enc, (_, spans) in pairs])
    ids = torch.tensor([enc.ids for enc in encodings])
    attention = torch.tensor([enc.attention_mask for enc in encodings])
    return ids, attention, torch.from_numpy(masks)


def fit(base: MiniLM, data: list[Example]) -> SpanClassifier:
    torch.manual_seed(PARAMETERS["seed"])
    shuffle = random.Random(PARAMETERS["seed"])
    model = SpanClassifier(base, PARAMETERS["rank"])
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(
        trainable, lr=PARAMETERS["learning_rate"], weight_decay=PARAMETERS["weight_decay"]
    )
    valid = sum(e.valid for e in data)
    loss = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(data) - valid) / valid))
    order = list(data)
    model.train()
    for _ in range(PARAMETERS["epochs"]):
        shuffle.shuffle(order)
        for start in range(0, len(order), PARAMETERS["batch"]):
            batch = order[start : start + PARAMETERS["batch"]]
            labels = torch.tensor([float(e.valid) for e in batch])
            optimiser.zero_grad()
            loss(model(*tensors(base, batch)), labels).backward()
            optimiser.step()
    return model.eval()


@torch.no_grad()
def predict(base: MiniLM, model: SpanClassifier, data: list[Example]) -> list[float]:
    scores: list[float] = []
    for start in range(0, len(data), 32):
        scores += torch.sigmoid(model(*tensors(base, data[start : start + 32]))).tolist()
    return scores


def out_of_fold(base: MiniLM, data: list[Example]) -> dict[str, float]:
    """Each tuning sentence's score from a model fitted without its comment's examples."""
    from sklearn.model_selection import GroupKFold

    scores: dict[str, float] = {}
    groups = [e.item.comment_id for e in data]
    for fold, (train, test) in enumerate(GroupKFold(FOLDS).split(data, groups=groups)):
        model = fit(base, [data[i] for i in train])
        held = [data[i] for i in test]
        scores.update(zip((e.item.sentence for e in held), predict(base, model, held), strict=True))
        print(f"fold {fold + 1} of {FOLDS} done", flush=True)
    return {sentence: round(score, 6) for sentence, score in sorted(scores.items())}


def adapter_tensors(model: SpanClassifier) -> dict[str, np.ndarray]:
    """The adapters under the encoder's own layer names, and the head."""
    named = {
        name.removeprefix("encoder.").replace(".base", ""): parameter.detach().numpy().copy()
        for name, parameter in model.named_parameters()
        if parameter.requires_grad
    }
    return {name: value for name, value in sorted(named.items())}


def slice_check(base: MiniLM, gold: list[GoldItem], model_name: str, adapters: Path) -> dict[str, Any]:
    """Fit on the slice, write its adapters to `adapters`, and score the held-back slice with them."""
    from safetensors.numpy import save_file

    tune = examples([i for i in gold if i.split == "tune"][: SLICE["tuning_items"]], model_name)
    held = examples([i for i in gold if i.split == "heldout"][: SLICE["held_back_items"]], model_name)
    save_file(adapter_tensors(fit(base, tune)), str(adapters))
    scores = SpanModel(adapters).probabilities([(e.row["sentence"], candidate_spans(e.row)) for e in held])
    return {
        "training": {"sha256": training_hash(model_name), "parameters": PARAMETERS},
        "slice": {**SLICE, "tuning_examples": len(tune)},
        "scores": {e.item.candidate_id: round(float(s), 6) for e, s in zip(held, scores, strict=True)},
    }


def write_json(path: Path, record: dict[str, Any]) -> None:
    path.write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2) + b"\n")


def main() -> None:
    from safetensors.numpy import save_file

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=SPAN_ADAPTER.parent)
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--final-only", action="store_true", help="only the fit on the whole tuning part")
    only.add_argument("--slice-only", action="store_true", help="only the slice check (its adapters too)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    model_name = resolve_model_name(ExtractConfig().model)
    gold = load_gold()
    base = MiniLM(max_tokens=MAX_TOKENS)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.slice_only:
        check = slice_check(base, gold, model_name, args.out_dir / "span_adapter_slice.safetensors")
        write_json(args.out_dir / SPAN_SLICE_CHECK.name, check)
        return
    tune = [e for e in examples(gold, model_name) if e.item.split == "tune"]
    if not args.final_only:
        record = {"training": {"sha256": training_hash(model_name), "parameters": PARAMETERS}}
        write_json(args.out_dir / SPAN_OUT_OF_FOLD.name, {**record, "scores": out_of_fold(base, tune)})
    save_file(adapter_tensors(fit(base, tune)), str(args.out_dir / SPAN_ADAPTER.name))
    print(f"{len(tune)} tuning examples -> {args.out_dir / SPAN_ADAPTER.name}")
    if not args.final_only:
        with tempfile.TemporaryDirectory() as scratch:
            check = slice_check(base, gold, model_name, Path(scratch) / "span_adapter_slice.safetensors")
        write_json(args.out_dir / SPAN_SLICE_CHECK.name, check)


if __name__ == "__main__":
    main()
