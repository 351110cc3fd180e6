"""The validity score: the shipped trees walked with numpy give scikit-learn's probabilities, the
fine-tuned encoder run with numpy gives torch's, the score is deterministic, the build scripts rebuild
the shipped model from the shipped gold set (the same trees, numbers equal to float rounding; adapters
that score alike), the threshold sends each candidate to the right file, and the measured quality
holds."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.core.paths import SPAN_ADAPTER, SPAN_OUT_OF_FOLD, SPAN_SLICE_CHECK, VALIDITY_MODEL
from knowref60k.core.records import Span
from knowref60k.extract.scorer import BASE_FEATURES, CONTEXT_DIMENSIONS, FEATURES, TreeEnsemble
from knowref60k.prepare.preparer import Preparer
from tests.conftest import REPO
from tests.test_model_evaluation import in_eval_environment


def test_the_trees_walked_with_numpy_give_scikit_learns_probabilities(tmp_path: Path) -> None:
    from knowref60k.quality.training import export, fit

    rng = np.random.default_rng(0)
    features = rng.normal(size=(400, len(FEATURES)))
    features[rng.random(features.shape) < 0.05] = np.nan  # missing values go the way the node says
    labels = (features[:, 0] + features[:, 3] * features[:, 5] > 0).astype(int)
    model = fit(features, labels)
    path = tmp_path / "model.json"
    projection = {"mean": [0.0] * 4, "components": [[1.0, 0.0, 0.0, 0.0]] * CONTEXT_DIMENSIONS}
    model_json = {"features": list(FEATURES), "projection": projection, **export(model), "threshold": 0.5}
    path.write_bytes(orjson.dumps({**model_json, "training": {}}))
    ours = TreeEnsemble.load(path).score(features)
    assert np.abs(ours - model.predict_proba(features)[:, 1]).max() < 1e-6
    assert ((ours >= 0.5) == (model.predict(features) == 1)).all()


def test_the_design_matrix_is_the_base_features_then_both_projected_context_vectors(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    components = np.eye(CONTEXT_DIMENSIONS, 10)
    projection = {"mean": [1.0] * 10, "components": components.tolist()}
    path.write_bytes(
        orjson.dumps({"features": list(FEATURES), "projection": projection, "baseline": 0.0, "trees": []})
    )
    model = TreeEnsemble.load(path)
    base = [[float(i) for i in range(BASE_FEATURES)]]
    first, second = np.arange(10, dtype=float), np.arange(10, 20, dtype=float)
    design = model.design(base, [[first, second]])
    assert design.shape == (1, len(FEATURES))
    assert list(design[0, :BASE_FEATURES]) == base[0]
    projected = [*(first - 1)[:CONTEXT_DIMENSIONS], *(second - 1)[:CONTEXT_DIMENSIONS]]
    assert list(design[0, BASE_FEATURES:]) == projected
    with pytest.raises(UserError, match="another spaCy pipeline"):
        model.design(base, [[np.zeros(96), np.zeros(96)]])


def test_a_model_for_other_features_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_bytes(
        orjson.dumps(
            {"features": ["a", "b"], "baseline": 0.0, "trees": [], "threshold": 0.5, "projection": {}}
        )
    )
    with pytest.raises(UserError, match="other features than this code computes"):
        TreeEnsemble.load(path)
    with pytest.raises(UserError, match="validity model not found"):
        TreeEnsemble.load(tmp_path / "missing.json")


def candidate(number: int, score: float | None) -> dict[str, Any]:
    sentence = f"Anna met Beth at {number}, but she left."
    return {
        "candidate_id": f"c{number}",
        "source_file": "RC_2099-01.ndjson",
        "line_number": number,
        "comment_id": f"k{number}",
        "link_id": "t3_x",
        "subreddit": "test",
        "created_utc": 1,
        "sentence": sentence,
        "connective": ",",
        "connective_start": sentence.index(","),
        "connective_end": sentence.index(",") + 1,
        "antecedent1": "Anna",
        "antecedent1_start": 0,
        "antecedent1_end": 4,
        "antecedent2": "Beth",
        "antecedent2_start": 9,
        "antecedent2_end": 13,
        "pronoun": "she",
        "pronoun_start": sentence.index("she"),
        "pronoun_end": sentence.index("she") + 3,
        "pronoun_gender": "female",
        "validity_score": score,
    }


def test_a_candidate_on_each_side_of_the_threshold_goes_to_its_file(tmp_path: Path) -> None:
    path = tmp_path / "RC_2099-01.candidates.parquet"
    rows = [candidate(1, 0.9), candidate(2, 0.2), candidate(3, None), candidate(4, 0.5)]
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), path)
    with Preparer(PrepareConfig(validity_threshold=0.5), tmp_path / "dedup.sqlite") as preparer:
        report = preparer.prepare_file(path, tmp_path / "items")
    items = pq.read_table(report.rows_path).to_pylist()
    set_aside = pq.read_table(tmp_path / "items" / "RC_2099-01.below-threshold.parquet").to_pylist()
    # At the threshold an item is kept; without a score (an unscored extraction) it goes on.
    assert sorted(item["candidate_id"] for item in items) == ["c1", "c3", "c4"]
    assert [(row["candidate_id"], row["validity_score"]) for row in set_aside] == [("c2", 0.2)]
    assert report.stats["threshold"].dropped == {"below_validity_threshold": 1}


def test_candidates_held_below_the_threshold_can_be_sent_later(tmp_path: Path) -> None:
    """Held back is not lost: the set-aside file prepared again with a lower threshold gives their items,
    against the same de-duplication index, which never saw them."""
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    path = tmp_path / "RC_2099-01.candidates.parquet"
    rows = [candidate(1, 0.9), candidate(2, 0.2), candidate(3, 0.3)]
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), path)
    items, index = tmp_path / "items", tmp_path / "items" / "dedup-index.sqlite"
    prepare = ["prepare", "--out", str(items), "--validity-threshold"]
    first = CliRunner().invoke(app, [*prepare, "0.5", str(path)])
    assert first.exit_code == 0, first.output
    assert "2 candidates scored below the validity threshold 0.5" in " ".join(first.output.split())
    held = items / "RC_2099-01.below-threshold.parquet"
    assert sorted(pq.read_table(held).column("candidate_id").to_pylist()) == ["c2", "c3"]
    later = CliRunner().invoke(app, [*prepare, "0", str(held)])
    assert later.exit_code == 0, later.output
    sent = pq.read_table(items / "RC_2099-01.below-threshold.items.parquet").column("candidate_id")
    assert sorted(sent.to_pylist()) == ["c2", "c3"] and index.exists()


def test_the_default_threshold_is_the_cost_models_above_the_models_recall_floor() -> None:
    from knowref60k.labelling.config import LabellingConfig, chosen_levels
    from knowref60k.settings.effective import RunConfig

    model = orjson.loads(VALIDITY_MODEL.read_bytes())
    levels = chosen_levels(LabellingConfig())
    assert levels is not None
    assert RunConfig.load().prepare.validity_threshold == levels.threshold
    assert PrepareConfig(validity_threshold=0.25).validity_threshold == 0.25
    assert 0.0 < model["threshold"] <= levels.threshold <= levels.skip


def spans_of(text: str, *words: str) -> tuple[str, list[Span]]:
    return text, [Span(text.index(word), text.index(word) + len(word)) for word in words]


SENTENCES = [
    spans_of("Anna met Beth at the fair, but she left early.", "Anna", "Beth", "she"),
    spans_of("Jagex told Sauron about it, because he asked nicely.", "Jagex", "Sauron", " he"),
]
# How far a rebuilt adapter's scores may lie from the shipped one's: on the machine that built them the
# rebuild is byte-identical; torch's float arithmetic may differ in the last bits on another CPU.
SCORE_TOLERANCE = 1e-3
TORCH_SPAN_MODEL = """
import json, sys, torch
sys.path.insert(0, "tools/scorer")
from safetensors.numpy import save_file
import finetune
from knowref60k.core.encoder import MiniLM
from knowref60k.core.records import Span
from knowref60k.extract.span_model import MAX_TOKENS

class Row:  # what finetune.tensors reads of an example
    def __init__(self, text, spans):
        self.row = {"sentence": text}
        for name, (start, end) in zip(("antecedent1", "antecedent2", "pronoun"), spans):
            self.row[name + "_start"], self.row[name + "_end"] = start, end

torch.manual_seed(1)
base = MiniLM(max_tokens=MAX_TOKENS)
model = finetune.SpanClassifier(base, rank=4).eval()
with torch.no_grad():
    for parameter in model.parameters():
        if parameter.requires_grad:
            parameter.normal_(0, 0.05)
save_file(finetune.adapter_tensors(model), sys.argv[1])
rows = [Row(text, spans) for text, spans in json.loads(sys.argv[2])]
print(json.dumps(finetune.predict(base, model, rows)))
"""


@pytest.mark.integration
def test_the_fine_tuned_encoder_run_with_numpy_gives_torchs_probabilities(tmp_path: Path) -> None:
    from knowref60k.extract.span_model import SpanModel

    adapters = tmp_path / "adapters.safetensors"
    spans = [(text, [(s.start, s.end) for s in spans]) for text, spans in SENTENCES]
    output = in_eval_environment(
        "-c", TORCH_SPAN_MODEL, str(adapters), orjson.dumps(spans).decode(), home=tmp_path
    )
    torch_scores = np.array(orjson.loads(output.strip().splitlines()[-1]))
    numpy_scores = SpanModel(adapters).probabilities(SENTENCES)
    assert np.abs(numpy_scores - torch_scores).max() < 1e-5
    # random adapters move the scores away from the untrained head's: the adapters were applied
    assert np.abs(torch_scores - 0.5).max() > 1e-3


def test_the_encoder_reads_each_span_between_its_marks() -> None:
    from knowref60k.extract.span_model import marked

    text = "Ann told Bea that she was late."
    # The second antecedent comes first in the sentence: each span keeps its own marks and place.
    text_marked, spans = marked(text, [Span(9, 12), Span(0, 3), Span(18, 21)])
    assert text_marked == "[ Ann ] told [ Bea ] that < she > was late."
    assert [text_marked[span.start : span.end] for span in spans] == ["Bea", "Ann", "she"]
    before, _ = marked("She said Ann met Bea.", [Span(9, 12), Span(17, 20), Span(0, 3)])
    assert before == "< She > said [ Ann ] met [ Bea ]."


def test_a_candidate_scores_alike_alone_in_a_batch_and_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logit of a candidate depends on nothing else in its batch (a text of over 32 tokens pads the
    others past the size at which a product keeps fewer bits), so a model remembers it: asked again, the
    encoder is not run and the probability is the same to the last bit."""
    from knowref60k.extract.span_model import SpanModel

    longer = spans_of(
        "Bea phoned Ann from the little station by the old harbour on a cold and windy Sunday morning in "
        "late November, and she laughed at the long and winding story she heard about the lost ferry.",
        "Bea",
        "Ann",
        "she",
    )
    candidates = [*SENTENCES, longer]
    alone = SpanModel()
    one_by_one = [alone.probabilities([candidate])[0] for candidate in candidates]
    batched = SpanModel()
    assert len(batched.encoder.token_offsets([longer[0]])[1][0]) > 32
    assert list(batched.probabilities(candidates[::-1])[::-1]) == one_by_one

    def refuse(_candidates: Any) -> None:
        raise AssertionError("a remembered candidate was encoded again")

    monkeypatch.setattr(batched, "_logits", refuse)
    assert list(batched.probabilities([*candidates, candidates[0]])) == [*one_by_one, one_by_one[0]]


def test_a_model_remembers_the_last_candidates_it_was_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its bound the least recently asked are forgotten, also within one call that mixes remembered
    and new candidates."""
    from knowref60k.extract import span_model

    monkeypatch.setattr(span_model, "REMEMBERED", 2)
    model = span_model.SpanModel()
    encoded: list[str] = []
    logits = {text: float(n) for n, text in enumerate("abcd")}

    def fake_logits(candidates: Any) -> list[float]:
        encoded.extend(text for text, _ in candidates)
        return [logits[text] for text, _ in candidates]

    monkeypatch.setattr(model, "_logits", fake_logits)
    ask = [(text, []) for text in "abcd"]
    model.probabilities(ask[:2])
    model.probabilities([ask[0], ask[2]])  # "a" asked again: "b" is the least recent, forgotten
    assert list(model.remembered) == [("a", ()), ("c", ())]
    again = model.probabilities([ask[1], ask[0], ask[3]])
    assert encoded == ["a", "b", "c", "b", "d"]
    assert list(again) == list(span_model.logistic(np.array([1.0, 0.0, 3.0])))
    assert list(model.remembered) == [("b", ()), ("d", ())]


def test_adapters_other_than_the_models_are_refused(tmp_path: Path) -> None:
    from knowref60k.extract.span_model import SpanModel

    copy = tmp_path / SPAN_ADAPTER.name
    copy.write_bytes(SPAN_ADAPTER.read_bytes())
    expected = orjson.loads(VALIDITY_MODEL.read_bytes())["training"]["span_model"]["sha256"]
    assert SpanModel(copy, expected).probabilities(SENTENCES[:1]).shape == (1,)
    with pytest.raises(UserError, match="not the adapters the validity model was built with"):
        SpanModel(copy, "0" * 64)
    with pytest.raises(UserError, match="adapters not found"):
        SpanModel(tmp_path / "missing.safetensors")


def test_workers_map_one_shared_copy_of_the_encoder_that_scores_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`share` writes the merged encoder once; a model loaded after it memory-maps those weights (the
    page cache holds one copy for every worker) and gives the same probabilities."""
    from knowref60k.extract.span_model import SpanModel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    private = SpanModel()
    assert not private.mapped.exists() and private.mapped.is_relative_to(tmp_path)
    private.share()
    mapped = SpanModel()
    dense = mapped.encoder.transposed["encoder.layer.0.attention.self.query"]
    assert isinstance(dense, np.memmap) and isinstance(
        mapped.encoder.weights["embeddings.LayerNorm.weight"], np.memmap
    )
    assert not isinstance(private.encoder.transposed["encoder.layer.0.attention.self.query"], np.memmap)
    assert np.array_equal(mapped.probabilities(SENTENCES), private.probabilities(SENTENCES))
    assert sorted(p.name for p in tmp_path.glob("knowref60k/*")) == [private.mapped.name]  # no partial left


@pytest.mark.integration
def test_the_score_is_deterministic(extractor: Any) -> None:
    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.scorer_data import examples

    items = load_gold()[:150]
    first = examples(items, resolve_model_name(None))
    second = examples(items, resolve_model_name(None))
    assert [e.features for e in first] == [e.features for e in second]
    model = TreeEnsemble.load()
    scores = model.score(model.design([e.features for e in first], [e.context for e in first]))
    again = model.score(model.design([e.features for e in second], [e.context for e in second]))
    assert list(scores) == list(again)
    assert ((scores >= 0) & (scores <= 1)).all()


@pytest.mark.integration
def test_the_build_script_rebuilds_the_shipped_model_from_the_shipped_data(tmp_path: Path) -> None:
    out = tmp_path / "validity_model.json"
    subprocess.run(
        [sys.executable, "tools/scorer/build.py", "--out", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    # Byte for byte: every product the features and the fit depend on is exact on any processor
    # (docs/extraction.md, "The same score on every processor").
    assert out.read_bytes() == VALIDITY_MODEL.read_bytes()


@pytest.mark.integration
def test_the_build_takes_screening_examples_weighted_and_rebuilds_the_same_model_from_them(
    tmp_path: Path,
) -> None:
    """`build.py --screening-examples`: the file's examples join the trees' fit and the model records
    them (file, hash, counts, weight); built twice from the same files, the model is the same."""
    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.labelling.config import LabellingConfig
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.scorer_data import examples
    from knowref60k.quality.screening_examples import screening_examples, write_examples

    model_name = resolve_model_name(None)
    held_back = [item for item in load_gold() if item.split == "heldout"][:300]
    made = examples(held_back, model_name)
    votes = [
        {
            "stage": "screening", "item_id": e.row["candidate_id"], "annotation_id": n, "annotator_id": 1,
            "choice": "valid" if e.valid else "not_a_person", "created_at": n, "updated_at": n,
        }
        for n, e in enumerate(made)
    ]  # fmt: skip
    found, _ = screening_examples(votes, {e.row["candidate_id"]: e.row for e in made}, LabellingConfig())
    path = tmp_path / "screening-examples.jsonl"
    write_examples(found, path)
    built = []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.json"
        arguments = ["--out", str(out), "--screening-examples", str(path)]
        subprocess.run(
            [sys.executable, "tools/scorer/build.py", *arguments], cwd=REPO, check=True, capture_output=True
        )
        built.append(out.read_bytes())
    assert built[0] == built[1]
    model, shipped = orjson.loads(built[0]), orjson.loads(VALIDITY_MODEL.read_bytes())
    assert model["training"]["supplement"] == {
        "file": path.name,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "examples": len(found),
        "valid": sum(e.valid for e in made),
        "weight": 0.5,
    }
    assert "supplement" not in shipped["training"] and model["trees"] != shipped["trees"]


@pytest.mark.integration
def test_the_fine_tuning_script_rebuilds_the_slice_check_it_shipped(tmp_path: Path) -> None:
    """`finetune.py --slice-only`: the whole fit's code on the first tuning items, its adapters scored by
    extraction's numpy encoder on the first held-back items, as the shipped `span_slice_check.json`
    (written by the same run as the shipped adapters) records them; `make rebuild-check` compares the
    whole fit with the shipped adapters."""
    from safetensors.numpy import load_file

    in_eval_environment("tools/scorer/finetune.py", "--slice-only", "--out-dir", str(tmp_path), home=tmp_path)
    rebuilt = orjson.loads((tmp_path / SPAN_SLICE_CHECK.name).read_bytes())
    shipped = orjson.loads(SPAN_SLICE_CHECK.read_bytes())
    assert (
        rebuilt["training"] == shipped["training"] == orjson.loads(SPAN_OUT_OF_FOLD.read_bytes())["training"]
    )
    assert rebuilt["slice"] == shipped["slice"] and rebuilt["slice"]["tuning_examples"] >= 100
    assert rebuilt["scores"].keys() == shipped["scores"].keys() and len(shipped["scores"]) >= 100
    difference = np.array([rebuilt["scores"][key] - shipped["scores"][key] for key in shipped["scores"]])
    assert np.abs(difference).max() < SCORE_TOLERANCE
    shapes = {name: value.shape for name, value in load_file(str(SPAN_ADAPTER)).items()}
    sliced = load_file(str(tmp_path / "span_adapter_slice.safetensors"))
    assert {name: value.shape for name, value in sliced.items()} == shapes


@pytest.mark.rebuild
@pytest.mark.integration
def test_the_fine_tuning_script_rebuilds_adapters_that_score_as_the_shipped_ones(tmp_path: Path) -> None:
    """The final fit of `finetune.py` (its five folds' out-of-fold scores take four times as long and run
    the same code), compared by the scores on the held-back gold candidates."""
    from safetensors.numpy import load_file

    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.extract.span_model import SpanModel, candidate_spans
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.scorer_data import examples

    command = ("tools/scorer/finetune.py", "--final-only", "--out-dir", str(tmp_path))
    in_eval_environment(*command, home=tmp_path, timeout=None)
    rebuilt = tmp_path / SPAN_ADAPTER.name
    shapes = {name: value.shape for name, value in load_file(str(SPAN_ADAPTER)).items()}
    assert {name: value.shape for name, value in load_file(str(rebuilt)).items()} == shapes
    held_back = [item for item in load_gold() if item.split == "heldout"]
    candidates = [
        (e.row["sentence"], candidate_spans(e.row)) for e in examples(held_back, resolve_model_name(None))
    ]
    difference = SpanModel(rebuilt).probabilities(candidates) - SpanModel().probabilities(candidates)
    assert len(candidates) >= 400
    assert np.abs(difference).max() < SCORE_TOLERANCE


@pytest.mark.integration
def test_the_score_ranks_the_held_back_gold_candidates() -> None:
    """Quality on a fixed slice the model never saw (the gold set's held-back part, the wide pool's
    structure), so that a change that loses ranking power or recall at the threshold fails here. The
    bounds lie below what the shipped model reaches there (`make eval` prints its curve)."""
    from sklearn.metrics import average_precision_score

    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.score_eval import judged_candidates
    from knowref60k.quality.scorer_data import TRAINING_CONFIG

    held_back = [item for item in load_gold() if item.split == "heldout"]
    judged = judged_candidates(held_back, TRAINING_CONFIG, resolve_model_name(None), {})
    valid = np.array([j.error is None for j in judged])
    scores = np.array([j.score for j in judged])
    assert len(judged) >= 400 and valid.sum() >= 100
    assert average_precision_score(valid, scores) >= 0.75
    kept = scores >= orjson.loads(VALIDITY_MODEL.read_bytes())["threshold"]
    assert valid[kept].sum() / valid.sum() >= 0.90
    assert valid[kept].mean() >= valid.mean() + 0.08


def learning_curve(out: Path, *arguments: str, timeout: float | None = 600) -> dict[str, Any]:
    in_eval_environment(
        "tools/scorer/learning_curve.py", *arguments, "--out", str(out), home=out.parent, timeout=timeout
    )
    curve: dict[str, Any] = orjson.loads(out.read_bytes())
    return curve


def shipped_tuning_average_precision() -> float:
    """The shipped model's out-of-fold average precision on the tuning part (what `make eval` reports)."""
    from sklearn.metrics import average_precision_score

    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.quality.gold import load_gold
    from knowref60k.quality.scorer_data import examples
    from knowref60k.quality.training import combined, out_of_fold, span_out_of_fold

    model_name = resolve_model_name(None)
    tune = [e for e in examples(load_gold(), model_name) if e.item.split == "tune"]
    scores = combined(tune, out_of_fold(tune), span_out_of_fold(model_name))
    return float(average_precision_score([e.valid for e in tune], scores))


def check_drops_with_less_data(curve: dict[str, Any]) -> None:
    assert sorted(curve) == ["0.1", "1.0"]
    for half in ("trees", "encoder", "score"):
        assert curve["0.1"][f"average_precision_{half}"] < curve["1.0"][f"average_precision_{half}"]
    assert curve["0.1"]["precision_at_rules_yield"] <= curve["1.0"]["precision_at_rules_yield"]


@pytest.mark.integration
def test_the_learning_curve_starts_from_the_shipped_scores(tmp_path: Path) -> None:
    """`learning_curve.py`: its whole-data row is the shipped model's out-of-fold quality."""
    curve = learning_curve(tmp_path / "curve.json", "--shares", "1.0")
    assert sorted(curve) == ["1.0"]
    assert curve["1.0"]["average_precision_score"] == pytest.approx(
        shipped_tuning_average_precision(), abs=1e-4
    )


@pytest.mark.integration
def test_the_learning_curve_drops_with_less_data_on_a_slice(tmp_path: Path) -> None:
    """Training each fold on a tenth of its comments ranks worse, on the first 500 tuning items (the
    whole tuning part: `make rebuild-check`)."""
    check_drops_with_less_data(
        learning_curve(tmp_path / "curve.json", "--shares", "0.1", "--tuning-items", "500")
    )


@pytest.mark.rebuild
@pytest.mark.integration
def test_the_learning_curve_starts_from_the_shipped_scores_and_drops_with_less_data(tmp_path: Path) -> None:
    """`learning_curve.py` on the whole tuning part: its whole-data row is the shipped model's out-of-fold
    quality, and training each fold on a tenth of its comments ranks worse."""
    curve = learning_curve(tmp_path / "curve.json", "--shares", "0.1", timeout=None)
    assert curve["1.0"]["average_precision_score"] == pytest.approx(
        shipped_tuning_average_precision(), abs=1e-4
    )
    check_drops_with_less_data(curve)
