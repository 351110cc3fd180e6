"""Recall of candidate extraction on the sentences the KnowRef (2019) reference pipeline accepted."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.cache import cache_key, cache_path, computing, read_cached, write_cached
from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.model_file import recall_floor
from knowref60k.core.names import NAMES_DIR
from knowref60k.core.paths import SCORER_DIR
from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stage import stage_modules
from knowref60k.core.stats import PipelineStats
from knowref60k.core.versioning import code_fingerprint, data_fingerprint
from knowref60k.extract.extractor import BOTS_DIR
from knowref60k.extract.nlp import model_version
from knowref60k.extract.pipeline import STAGES, CandidateExtractor, ChunkResult, StageClass
from knowref60k.extract.stages.connectives import ConnectiveFinder
from knowref60k.extract.stages.score import ValidityScore
from knowref60k.ingest.readers import LineChunk

_DETOKENIZE_RULES = [
    (re.compile(r"-LRB-|-LSB-|-LCB-"), "("),
    (re.compile(r"-RRB-|-RSB-|-RCB-"), ")"),
    (re.compile(r"``\s*|\s*''"), '"'),
    (re.compile(r"\(\s+"), "("),
    (re.compile(r"\s+([.,;:!?%)\]}])"), r"\1"),
    (re.compile(r"\s+(n't|'s|'re|'ve|'ll|'d|'m)\b", re.I), r"\1"),
    (re.compile(r"\b(can|gon|wan)\s+(not|na)\b", re.I), r"\1\2"),
    (re.compile(r"\$\s+"), "$"),
]
_WORD = re.compile(r"\S+")
log = logging.getLogger(__name__)


def detokenize(tokenized: str) -> str:
    """CoreNLP-style tokens ("does n't", "Johnson 's", "-LRB-") back to running text."""
    text = tokenized
    for pattern, replacement in _DETOKENIZE_RULES:
        text = pattern.sub(replacement, text)
    return text.strip()


def extract_sentences(
    source: str,
    sentences: Sequence[str],
    config: ExtractConfig,
    model_name: str,
    stages: Sequence[StageClass] = STAGES,
) -> ChunkResult:
    """The whole extraction (or `stages`) on sentences given one per line: row `line_number` n comes from
    sentence n. The evaluation runs it on the same few thousand sentences under several settings, and
    `make eval`, the build scripts and the tests again: results are kept in the user's cache folder under
    a hash of everything they depend on (the sentences, the settings, the spaCy pipeline and its version,
    the stages' code and the data files they read)."""
    key = _extraction_key(source, sentences, config, model_name, stages)
    path = cache_path("extraction", key).with_suffix(".json")
    with computing(path):
        cached = _result_from_cache(read_cached(path))
        if cached is not None:
            return cached
        data = "\n".join(sentence.replace("\n", " ") for sentence in sentences).encode() + b"\n"
        result = CandidateExtractor(config, model_name, stages).process(source, "text", LineChunk(1, data))
        write_cached(path, _result_to_cache(result))
    return result


def stages_for(config: ExtractConfig) -> tuple[StageClass, ...]:
    """The stages whose results the evaluation reads: under the rules' person detection every candidate
    counts whatever its validity score, so the score (a third of the extraction's time) is left out."""
    if config.person_detection == "score":
        return STAGES
    return tuple(stage for stage in STAGES if stage is not ValidityScore)


def _extraction_key(
    source: str,
    sentences: Sequence[str],
    config: ExtractConfig,
    model_name: str,
    stages: Sequence[StageClass],
) -> str:
    return cache_key(
        source,
        config.fingerprint(model_name, model_version(model_name)),
        code_fingerprint(__name__, *stage_modules(stages)),
        " ".join(stage.__name__ for stage in stages),
        data_fingerprint(NAMES_DIR, BOTS_DIR, SCORER_DIR),
        orjson.dumps(list(sentences)),
    )


def _result_to_cache(result: ChunkResult) -> bytes:
    quarantined = [dataclasses.asdict(line) for line in result.quarantined]
    return orjson.dumps({"rows": result.rows, "quarantined": quarantined, "stats": result.stats.to_dict()})


def _result_from_cache(data: bytes | None) -> ChunkResult | None:
    if data is None:
        return None
    try:
        stored = orjson.loads(data)
        quarantined = [QuarantinedLine(**line) for line in stored["quarantined"]]
        return ChunkResult(stored["rows"], quarantined, PipelineStats.from_dict(stored["stats"]))
    except (orjson.JSONDecodeError, KeyError, TypeError) as error:
        log.warning("extracting again: the cached result is unreadable (%s)", error)
        return None


@dataclass(frozen=True)
class ReferenceItem:
    """One accepted sentence, with its antecedents and pronoun when the perturbation lets us recover them."""

    sentence: str
    antecedents: frozenset[str] | None
    pronoun: tuple[str, int] | None


def _occurrence(words: Sequence[str], index: int) -> tuple[str, int]:
    """(word, how many times it occurred before): identifies a token independent of tokenisation."""
    word = words[index].lower()
    return word, sum(1 for w in words[:index] if w.lower() == word)


def reference_item(item: dict[str, Any]) -> ReferenceItem:
    original = item["original_sentence"][0].split()
    perturbed = item["sentence_with_pronoun"].split()
    marked = next(
        (i for i, word in enumerate(perturbed) if word.startswith("[") and word.endswith("]")), None
    )
    perturbed = [word.strip("[]") if i == marked else word for i, word in enumerate(perturbed)]
    matcher = difflib.SequenceMatcher(a=original, b=perturbed, autojunk=False)
    replaced = []
    pronoun = None
    for operation, a1, a2, b1, b2 in matcher.get_opcodes():
        if operation == "equal":
            if marked is not None and b1 <= marked < b2:
                pronoun = _occurrence(original, a1 + marked - b1)
        elif not all(word.lower() in TARGET_PRONOUNS for word in original[a1:a2]):
            replaced.append(original[a2 - 1].lower())
    antecedents = frozenset(replaced) if len(set(replaced)) == 2 else None
    return ReferenceItem(detokenize(" ".join(original)), antecedents, pronoun)


def load_reference(path: Path) -> list[ReferenceItem]:
    """KnowRef (2019)'s items: a JSON list of objects with `original_sentence` (a list of one sentence,
    tokenised) and `sentence_with_pronoun`; a malformed file is a UserError naming it and the item."""
    if not path.is_file():
        raise UserError(f"reference items not found: {path} (expected ../shared/data/knowref2019/...)")
    try:
        items = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise UserError(f"{path}: not JSON ({error})") from None
    if not isinstance(items, list):
        raise UserError(f"{path}: expected a JSON list of KnowRef items, not {type(items).__name__}")
    found = []
    for number, item in enumerate(items, start=1):
        try:
            found.append(reference_item(item))
        except KeyError as error:
            raise UserError(f"{path}, item {number}: missing field {error}") from None
        except (TypeError, IndexError, AttributeError) as error:
            raise UserError(f"{path}, item {number}: not a KnowRef item ({error})") from None
    return found


def count_connectives(sentence: str, finder: ConnectiveFinder) -> int:
    """Collapsed connectives of a sentence, its final punctuation excluded (as the filter counts them)."""
    words = re.findall(r"\w+(?:'\w+)?|[^\w\s]", sentence.lower())
    return len(finder.find(words[:-1]))


def _outcome(item: ReferenceItem, row: dict[str, Any] | None, threshold: float = 0.0) -> tuple[bool, bool]:
    """(accepted, accepted with the reference's two antecedents and pronoun); a candidate whose validity
    score is below `threshold` is not accepted."""
    if row is None or (row.get("validity_score") or 0.0) < threshold:
        return False, False
    sentence = row["sentence"]
    ours = frozenset(row[f"antecedent{i}"].split()[-1].lower() for i in (1, 2))
    before = _WORD.findall(sentence[: row["pronoun_start"]].lower())
    pronoun = (
        row["pronoun"].lower(),
        sum(1 for w in before if re.sub(r"\W", "", w) == row["pronoun"].lower()),
    )
    same = item.antecedents == ours and item.pronoun == pronoun
    return True, same


SUBSETS = ("all", "single_connective", "single_connective_tune", "single_connective_heldout")


def reference_part(item: ReferenceItem) -> str:
    """ "heldout" for a fixed third of the items (by a hash of the sentence), which rules are not tuned on."""
    digest = hashlib.sha1(item.sentence.encode()).hexdigest()
    return "heldout" if int(digest, 16) % 3 == 0 else "tune"


@dataclass
class SubsetScore:
    items: int = 0
    accepted: int = 0
    same: int = 0

    def add(self, accepted: bool, same: bool) -> None:
        self.items += 1
        self.accepted += accepted
        self.same += same

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "accepted": self.accepted,
            "accepted_share": self._share(self.accepted),
            "same_antecedents_and_pronoun": self.same,
            "same_share": self._share(self.same),
        }

    def _share(self, count: int) -> float:
        return round(count / self.items, 4) if self.items else 0.0


def evaluate(
    items: Sequence[ReferenceItem], config: ExtractConfig, model_name: str, threshold: float | None = None
) -> dict[str, Any]:
    """Run the whole extraction on the items (one per line) and score recall on two subsets; only
    candidates scoring at least `threshold` count as accepted (by default, in score mode, the validity
    model's: what `prepare` passes on; no threshold for the rules)."""
    if threshold is None:
        threshold = recall_floor() if config.person_detection == "score" else 0.0
    sentences = [item.sentence for item in items]
    result = extract_sentences("knowref2019", sentences, config, model_name, stages_for(config))
    rows = {row["line_number"]: row for row in result.rows}
    finder = ConnectiveFinder(ExtractConfig().connectives)
    scores = {name: SubsetScore() for name in SUBSETS}
    for line, item in enumerate(items, start=1):
        accepted, same = _outcome(item, rows.get(line), threshold)
        scores["all"].add(accepted, same)
        if count_connectives(item.sentence, finder) == 1:
            scores["single_connective"].add(accepted, same)
            scores[f"single_connective_{reference_part(item)}"].add(accepted, same)
    return {
        "max_connectives": config.max_connectives,
        "person_detection": config.person_detection,
        "antecedent_rule": config.antecedent_rule,
        "validity_threshold": threshold,
        "recoverable_reference_antecedents": sum(1 for item in items if item.antecedents and item.pronoun),
        "subsets": {name: score.to_dict() for name, score in scores.items()},
        "stats": result.stats.to_dict(),
    }


def evaluate_modes(
    items: Sequence[ReferenceItem], config: ExtractConfig, model_name: str, modes: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    return [evaluate(items, dataclasses.replace(config, **mode), model_name) for mode in modes]
