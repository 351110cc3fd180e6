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
            "`.venv-eval/bin/python -m knowref60k evaluate ...`"
        ) from None
    return torch, transformers


@dataclass
class Scorer:
    """A model and its tokenizer, loaded once; `method` says how options are compared."""

    model: Any
    tokenizer: Any
    method: str
    device: str

    def choose(self, contexts: Sequence[str], continuation: str) -> tuple[int, list[float]]:
        """The index of the best of two options, and their scores. For a causal LM `contexts` are the
        partial contexts and `continuation` the rest; for a masked LM `contexts` are the filled sentences
        with the option marked between the first pair of \\x00 characters."""
        if self.method == CAUSAL:
            scores = [self.loglikelihood(context, " " + continuation) for context in contexts]
        else:
            scores = [self.masked_score(text) for text in contexts]
        return max(range(len(scores)), key=lambda i: (scores[i], -i)), scores

    def loglikelihood(self, context: str, continuation: str) -> float:
        """log P(continuation | context), tokenised as the harness does (`_encode_pair`)."""
        torch = self._torch()
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        whole = self.tokenizer.encode(context + continuation, add_special_tokens=False)
        context_tokens = self.tokenizer.encode(context, add_special_tokens=False)
        continuation_tokens = whole[len(context_tokens) :]
        if not context_tokens:
            raise UserError("an empty context cannot be scored (a problem whose blank starts the sentence)")
        limit = int(getattr(self.model.config, "max_position_embeddings", 0) or len(whole))
        window = (context_tokens + continuation_tokens)[-(limit + 1) :][:-1]
        with torch.no_grad():
            logits = self.model(torch.tensor([window], device=self.device)).logits[0]
        logprobs = torch.log_softmax(logits.float(), dim=-1)[-len(continuation_tokens) :]
        targets = torch.tensor(continuation_tokens, device=self.device)
        return float(logprobs.gather(1, targets.unsqueeze(1)).sum())

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


def load_scorer(name: str, device: str = "cpu", dtype: str = "float32") -> Scorer:
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
    return Scorer(model, tokenizer, CAUSAL if causal else MASKED, device)
