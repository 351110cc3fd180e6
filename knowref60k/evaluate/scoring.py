"""Scoring a problem's two options with a language model (torch and transformers, the `eval` extra).

- A causal LM scores as WinoGrande and lm-evaluation-harness do ("partial scoring"): the context is the
  sentence up to the blank filled with an option, the continuation is what follows the blank, and the
  option whose context makes the continuation likelier wins. Tokenisation follows the harness exactly
  (no special tokens; the continuation's tokens are those of the whole string after the context's), so
  both give the same answers.
- A masked LM scores by substitution: the option is written in the blank with all its tokens masked, and
  the option whose tokens are likelier there wins (the sum of their log-probabilities).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowref60k.core.errors import UserError

CAUSAL, MASKED = "causal partial scoring", "masked substitution scoring"


def require_eval_extra() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise UserError(
            "model evaluation needs torch and transformers: `make setup-eval`, then run "
            "`.venv-eval/bin/python -m knowref60k evaluate-models ...`"
        ) from None
    return torch, transformers


@dataclass
class Scorer:
    """A model and its tokenizer, loaded once; `method` says how options are compared."""

    model: Any
    tokenizer: Any
    method: str
    device: str
    batch_size: int = 1

    def choose(self, contexts: Sequence[str], continuation: str) -> tuple[int, list[float]]:
        """The index of the best of two options, and their scores (see `choose_many`)."""
        return self.choose_many([(contexts, continuation)])[0]

    def choose_many(self, problems: Sequence[tuple[Sequence[str], str]]) -> list[tuple[int, list[float]]]:
        """For each problem, the index of its best option and the options' scores. For a causal LM a
        problem is its partial contexts and the rest of the sentence; for a masked LM, the filled
        sentences with the option marked between the first pair of \\x00 characters."""
        if self.method == CAUSAL:
            flat = self.loglikelihoods(
                [(context, " " + rest) for contexts, rest in problems for context in contexts]
            )
        else:
            flat = [self.masked_score(text) for contexts, _ in problems for text in contexts]
        results, start = [], 0
        for contexts, _ in problems:
            scores = flat[start : start + len(contexts)]
            start += len(contexts)
            results.append((max(range(len(scores)), key=lambda i: (scores[i], -i)), scores))
        return results

    def tokens(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """The model's input and the continuation's tokens, as the harness makes them (`_encode_pair`:
        trailing spaces move to the continuation, whose tokens are those of the whole string after the
        context's; no special tokens; the window cut on the left at the model's length)."""
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        whole = self.tokenizer.encode(context + continuation, add_special_tokens=False)
        context_tokens = self.tokenizer.encode(context, add_special_tokens=False)
        if not context_tokens:
            raise UserError("an empty context cannot be scored (a problem whose blank starts the sentence)")
        limit = int(getattr(self.model.config, "max_position_embeddings", 0) or len(whole))
        continuation_tokens = whole[len(context_tokens) :]
        return (context_tokens + continuation_tokens)[-(limit + 1) :][:-1], continuation_tokens

    def loglikelihoods(self, requests: Sequence[tuple[str, str]]) -> list[float]:
        """log P(continuation | context) of each request, `batch_size` sequences per forward pass (padded
        on the right, which a causal model's earlier positions never see)."""
        torch = self._torch()
        encoded = [self.tokens(context, continuation) for context, continuation in requests]
        scores = []
        for start in range(0, len(encoded), self.batch_size):
            batch = encoded[start : start + self.batch_size]
            width = max(len(window) for window, _ in batch)
            ids = torch.tensor(
                [window + [0] * (width - len(window)) for window, _ in batch], device=self.device
            )
            with torch.no_grad():
                logprobs = torch.log_softmax(self.model(ids).logits.float(), dim=-1)
            for row, (window, targets) in enumerate(batch):
                picked = logprobs[row, len(window) - len(targets) : len(window)]
                target = torch.tensor(targets, device=self.device).unsqueeze(1)
                scores.append(float(picked.gather(1, target).sum()))
        return scores

    def masked_score(self, marked: str) -> float:
        """Sum of the log-probabilities of the option's tokens, all masked at once in the sentence."""
        torch = self._torch()
        before, option, after = marked.split("\x00")
        tokens = self.tokenizer(before + option + after, return_offsets_mapping=True)
        start, end = len(before), len(before) + len(option)
        inside = [i for i, (s, e) in enumerate(tokens["offset_mapping"]) if s < end and e > start and e > s]
        ids = torch.tensor([tokens["input_ids"]], device=self.device)
        masked = ids.clone()
        masked[0, inside] = self.tokenizer.mask_token_id
        with torch.no_grad():
            logits = self.model(masked).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return float(sum(logprobs[i, ids[0, i]] for i in inside))

    def _torch(self) -> Any:
        import torch

        return torch


def load_scorer(name: str, device: str = "cpu", dtype: str = "float32", batch_size: int = 1) -> Scorer:
    """A Hugging Face causal or masked LM by path or name (whatever `transformers` can load, offline)."""
    torch, transformers = require_eval_extra()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {device}: no CUDA GPU on this machine (use --device cpu)")
    if dtype not in ("float32", "float16", "bfloat16"):
        raise UserError(f"--dtype {dtype}: use float32, float16 or bfloat16")
    try:
        config = transformers.AutoConfig.from_pretrained(name)
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as error:
        raise UserError(f"--model {name}: no model that transformers can load there ({error})") from None
    causal = any(
        arch.endswith("ForCausalLM") or arch.endswith("LMHeadModel") for arch in config.architectures or []
    )
    loader = transformers.AutoModelForCausalLM if causal else transformers.AutoModelForMaskedLM
    model = loader.from_pretrained(name, torch_dtype=getattr(torch, dtype)).to(device).eval()
    if not causal and tokenizer.mask_token_id is None:
        raise UserError(f"--model {name}: neither a causal LM nor a masked LM with a mask token")
    if batch_size < 1:
        raise UserError(f"--batch-size {batch_size}: at least 1")
    return Scorer(model, tokenizer, CAUSAL if causal else MASKED, device, batch_size)
