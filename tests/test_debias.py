"""AFLite: the algorithm on data with a planted artefact, determinism, parameter checks, the readers and
the evidence it writes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import sparse
from typer.testing import CliRunner

import knowref60k
from knowref60k.cli.app import app
from knowref60k.core.errors import UserError
from knowref60k.core.io import ITEM_SCHEMA
from knowref60k.debias.aflite import Parameters, aflite
from knowref60k.debias.evidence import pmi_subset, probe_accuracy, random_subset
from knowref60k.debias.features import labels_of, ngram_features
from knowref60k.debias.linear import fit
from knowref60k.debias.problems import Problem, read_problems
from knowref60k.debias.report import debias
from knowref60k_annotation.votes import VOTE_SCHEMA
from tests.test_release import screened, synthetic_run, vote

WORDS = [f"word{i}" for i in range(400)]
NAMES = [f"Name{i}" for i in range(60)]


def synthetic(size: int, planted_share: float, seed: int = 1) -> tuple[list[Problem], np.ndarray]:
    """Random sentences, balanced labels; in a planted share, a cue word gives the label away."""
    generator = random.Random(seed)
    problems, planted = [], np.zeros(size, dtype=bool)
    for index in range(size):
        words = generator.choices(WORDS, k=12)
        words.insert(generator.randrange(4, 12), "_")
        label = index % 2
        if generator.random() < planted_share:
            planted[index] = True
            words.append("cueone" if label == 1 else "cuezero")
        sentence = " ".join(words)
        first, second = generator.sample(NAMES, 2)
        filled = (sentence.replace("_", first), sentence.replace("_", second))
        problems.append(Problem(f"p{index}", filled, label))
    return problems, planted


def test_aflite_removes_the_planted_artefact_and_little_else() -> None:
    problems, planted = synthetic(1200, 0.25)
    features, labels = ngram_features(problems), labels_of(problems)
    result = aflite(features, labels, Parameters.for_size(len(problems), k=60, seed=0))  # n = 64
    removed = ~result.kept
    # Most of the planted set goes; of the rest only what chance and the drifting label balance (an
    # artefact too, once the planted instances are gone) make predictable.
    assert removed[planted].mean() >= 0.8, removed[planted].mean()
    assert removed[~planted].mean() <= 0.15, removed[~planted].mean()
    assert [r["round"] for r in result.rounds] == list(range(1, len(result.rounds) + 1))
    assert result.rounds[-1]["removed"] < 60 or len(problems) - removed.sum() - 60 < result.parameters.m
    # what is left holds nothing a fresh probe can learn; the same-size random subset still does
    kept = result.kept
    random_mask = random_subset(len(problems), int(kept.sum()), 0)
    groups = np.arange(len(problems))
    assert probe_accuracy(features[kept], labels[kept], groups[kept], 0) < 0.6
    assert probe_accuracy(features[random_mask], labels[random_mask], groups[random_mask], 0) > 0.6


def test_aflite_is_deterministic_and_the_seed_matters() -> None:
    problems, _ = synthetic(400, 0.3, seed=2)
    features, labels = ngram_features(problems), labels_of(problems)
    runs = [aflite(features, labels, Parameters.for_size(400, n=8, k=20, seed=seed)) for seed in (5, 5, 6)]
    assert np.array_equal(runs[0].removed_in_round, runs[1].removed_in_round)
    assert np.array_equal(runs[0].scores, runs[1].scores, equal_nan=True)
    assert not np.array_equal(runs[0].scores, runs[2].scores, equal_nan=True)


def test_parameters_scale_with_the_data_and_refuse_what_cannot_work() -> None:
    assert Parameters.for_size(60_000) == Parameters(m=10_000, n=64, k=500, tau=0.75, seed=0)
    assert Parameters.for_size(10_234) == Parameters(m=2_046, n=64, k=102, tau=0.75, seed=0)
    with pytest.raises(UserError, match="at least 100 instances"):
        Parameters.for_size(80)  # a release of 80 items cannot use AFLite's defaults
    with pytest.raises(UserError, match="must be smaller than the 500 instances"):
        Parameters.for_size(500, m=500)
    with pytest.raises(UserError, match=r"tau = 0\.3"):
        Parameters.for_size(500, tau=0.3)
    with pytest.raises(UserError, match="n and k must be at least 1"):
        Parameters.for_size(500, k=0)
    problems, _ = synthetic(200, 0.0)
    one_group = np.zeros(200, dtype=np.int64)
    with pytest.raises(UserError, match="200 of the 200 instances form one group"):
        aflite(ngram_features(problems), labels_of(problems), Parameters.for_size(200), one_group)


def exact_logistic_regression(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The same objective solved by plain Newton steps with the whole Hessian, in float64."""
    design = np.hstack([features, np.ones((len(features), 1))])
    penalty = np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the bias is not penalised
    parameters = np.zeros(design.shape[1])
    for _ in range(50):
        probabilities = 1 / (1 + np.exp(-design @ parameters))
        gradient = design.T @ (probabilities - labels) + penalty @ parameters
        hessian = design.T @ (design * (probabilities * (1 - probabilities))[:, None]) + penalty
        parameters -= np.linalg.solve(hessian, gradient)
    return parameters


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_fit_finds_the_regularised_optimum(kind: str) -> None:
    generator = np.random.default_rng(3)
    features = generator.normal(size=(600, 12)) * np.linspace(0.2, 3, 12)  # unevenly scaled columns
    truth = generator.normal(size=12)
    labels = (generator.random(600) < 1 / (1 + np.exp(-features @ truth))).astype(np.int8)
    given = features if kind == "dense" else sparse.csr_matrix(np.where(np.abs(features) > 1, features, 0))
    expected = exact_logistic_regression(features if kind == "dense" else given.toarray(), labels)
    model = fit(given, labels, max_iterations=50)
    weights = np.zeros(12)
    weights[model.columns if model.columns is not None else slice(None)] = model.weights
    assert np.allclose(weights, expected[:-1], atol=1e-3)
    assert model.bias == pytest.approx(expected[-1], abs=1e-3)
    assert np.array_equal(model.predict(given), (given @ expected[:-1] + expected[-1] > 0).astype(np.int8))


def test_pmi_baseline_removes_instances_with_label_words_first() -> None:
    problems, planted = synthetic(600, 0.3, seed=3)
    features, labels = ngram_features(problems), labels_of(problems)
    kept = pmi_subset(features, labels, 400)
    assert kept.sum() == 400
    assert (~kept)[planted].mean() > (~kept)[~planted].mean()


def write_winogrande_tsv(path: Path, problems: list[Problem]) -> None:
    """WinoGrande's layout: `sentence1` ends with the option (here the first word of each filling)."""
    lines = ["index\tsentence1\tsentence2\tlabel\tcandidate0\tcandidate1"]
    for number, problem in enumerate(problems):
        heads = [text.split(" ", 1)[0] for text in problem.filled]
        for option, text in enumerate(problem.filled):
            head, tail = text.split(" ", 1)
            lines.append(f"{number}\t{head}\t {tail}\t{int(option == problem.label)}\t{heads[0]}\t{heads[1]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_debias_writes_scores_a_report_and_a_figure(tmp_path: Path) -> None:
    problems, planted = synthetic(600, 0.25, seed=4)
    source = tmp_path / "train_s.tsv"
    write_winogrande_tsv(source, problems)
    assert [p.label for p in read_problems(source)] == [p.label for p in problems]
    report = debias(source, tmp_path / "out", {"k": 30, "seed": 0})
    rows = pq.read_table(tmp_path / "out" / "aflite.parquet").to_pylist()
    assert [row["id"] for row in rows] == [f"train_s-{i}" for i in range(600)]
    kept = np.array([row["aflite_kept"] for row in rows])
    assert all((row["aflite_removed_round"] is None) == row["aflite_kept"] for row in rows)
    assert report["kept"] == kept.sum() and (~kept)[planted].mean() >= 0.7  # m is only 120 here
    assert orjson.loads((tmp_path / "out" / "report.json").read_bytes()) == orjson.loads(orjson.dumps(report))
    evidence = report["evidence"]
    assert evidence["aflite"]["size"] == evidence["random"]["size"] == evidence["pmi"]["size"] == kept.sum()
    assert evidence["aflite"]["probe_accuracy"] < evidence["random"]["probe_accuracy"]
    assert (tmp_path / "out" / "report.png").read_bytes().startswith(b"\x89PNG")


def test_readers_name_the_file_and_line(tmp_path: Path) -> None:
    bad_header = tmp_path / "train.tsv"
    bad_header.write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"train\.tsv: line 1: expected the columns"):
        read_problems(bad_header)
    jsonl = tmp_path / "dev.jsonl"
    jsonl.write_text(
        '{"qID": "q1", "sentence": "Ann beat Bo because _ was fast.", "option1": "Ann", "option2": "Bo", '
        '"answer": "1"}\n'
        '{"qID": "q2", "sentence": "no blank", "option1": "A", "option2": "B", "answer": "2"}\n',
        encoding="utf-8",
    )
    with pytest.raises(UserError, match=r"dev\.jsonl: line 2: needs a '_' blank"):
        read_problems(jsonl)
    with pytest.raises(UserError, match="no such file"):
        read_problems(tmp_path / "missing.tsv")


# ---- releases: `release --debias` ----


def run_with_both_labels(folder: Path, items: int) -> Path:
    """A pipeline folder of `items` kept items, half labelled name1 and half name2; in every fifth a
    cue word tells the label."""
    run = synthetic_run(folder, {f"t3_{n}": 1 for n in range(items)})
    item_file = run / "items" / "RC_2099-01.items.parquet"
    rows = pq.read_table(item_file).to_pylist()
    for number, row in enumerate(rows):
        if number % 5 == 0:
            cue = " gladly" if number % 2 else " sadly"
            row["perturbed_sentence"] = row["sentence"] = row["sentence"].replace(" left.", cue + " left.")
    pq.write_table(pa.Table.from_pylist(rows, schema=ITEM_SCHEMA), item_file)
    choices = {row["candidate_id"]: "antecedent2" if n % 2 else "antecedent1" for n, row in enumerate(rows)}
    votes = [vote(a, choices[item], a, item) for item in choices for a in range(5)]
    votes += screened(list(choices))
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), run / "votes.parquet")
    return run


@pytest.mark.integration
def test_release_debias_adds_aflite_columns_and_a_debiased_config(tmp_path: Path) -> None:
    from datasets import load_dataset
    from huggingface_hub import DatasetCard

    run = run_with_both_labels(tmp_path / "run", 300)
    args = ["release", "--run", str(run), "--votes", str(run / "votes.parquet"), "--debias"]
    for out in ("a", "b"):
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / out), "--version", "v1"])
        assert result.exit_code == 0, result.output
    assert "items kept in the `debiased` config" in result.output
    first, second = tmp_path / "a" / "v1", tmp_path / "b" / "v1"
    for path in sorted(p for p in first.rglob("*") if p.is_file()):  # seeded: byte-identical
        assert path.read_bytes() == (second / path.relative_to(first)).read_bytes(), path
    manifest = orjson.loads((first / "manifest.json").read_bytes())
    assert manifest["config"]["debias"] == "ngrams" and manifest["aflite"]["instances"] == 300
    for split in ("train", "validation", "test"):
        rows = knowref60k.load_release(first, split).to_pylist()
        kept = knowref60k.load_release(first, split, debiased=True).to_pylist()
        assert [row for row in rows if row["aflite_kept"]] == kept
        assert manifest["aflite"]["splits"][split] == len(kept)
        assert all((row["aflite_removed_round"] is None) == row["aflite_kept"] for row in rows)
    every = [
        row
        for split in ("train", "validation", "test")
        for row in knowref60k.load_release(first, split).to_pylist()
    ]
    cued = [row for row in every if " gladly " in row["sentence"] or " sadly " in row["sentence"]]
    assert sum(not row["aflite_kept"] for row in cued) / len(cued) >= 0.8  # the cue gave them away
    assert manifest["aflite"]["kept"] == sum(row["aflite_kept"] for row in every)
    card = DatasetCard((first / "README.md").read_text())
    assert [c["config_name"] for c in card.data.configs] == ["default", "debiased"]
    assert "## Debiased subset (AFLite)" in card.text and "| aflite |" in card.text
    debiased = load_dataset(str(first), "debiased")
    assert sum(debiased[split].num_rows for split in debiased) == manifest["aflite"]["kept"]
    assert debiased["train"].features["label"].names == ["name1", "name2"]


def test_release_debias_refuses_a_release_too_small_for_aflite(tmp_path: Path) -> None:
    run = run_with_both_labels(tmp_path / "run", 40)
    args = ["release", "--run", str(run), "--votes", str(run / "votes.parquet"), "--debias"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r"), "--version", "v1"])
    assert result.exit_code == 2
    printed = " ".join(result.output.split())
    assert "AFLite cannot run" in printed and "at least 100 instances" in printed
    assert not (tmp_path / "r" / "v1").exists()
    plain = CliRunner().invoke(app, [*args[:-1], "--out", str(tmp_path / "r"), "--version", "v1"])
    assert plain.exit_code == 0, plain.output
    with pytest.raises(UserError, match="no debiased config"):
        knowref60k.load_release(tmp_path / "r" / "v1", "train", debiased=True)


# ---- the encoder features (all-MiniLM-L6-v2, installed by set-up) ----


def test_encoder_reproduces_the_published_similarity_of_all_minilm_l6_v2() -> None:
    from knowref60k.core.encoder import MiniLM

    encoder = MiniLM()
    # sentence-transformers' documented example for this model: cosine similarity 0.7553
    first, second, other = encoder.encode(
        ["A man is eating food.", "A man is eating a piece of bread.", "Stock markets fell on Monday."]
    )
    assert float(first @ second) == pytest.approx(0.7553, abs=5e-4)
    assert float(first @ other) < 0.2
    assert np.linalg.norm(first) == pytest.approx(1.0, abs=1e-5)


def test_the_encoder_packs_texts_without_letting_them_see_each_other() -> None:
    """Texts are packed end to end: each one's vectors are those it has alone, padding stays zero, and
    the wanted tokens' vectors are those of the whole pass."""
    from knowref60k.core.encoder import MiniLM

    encoder = MiniLM()
    texts = ["Bob told Tom that he won.", "A much longer sentence, which pads the short one out a lot more."]
    encodings, offsets = encoder.token_offsets(texts)
    together = encoder.token_states(encodings)
    for row, text in enumerate(texts):
        alone = encoder.token_states(encoder.token_offsets([text])[0])[0]
        length = len(alone)
        assert np.abs(together[row, :length] - alone).max() < 1e-4
        assert not together[row, length:].any() and all(end == 0 for _, end in offsets[row][length:])
    wanted = np.zeros(together.shape[:2], dtype=bool)
    wanted[0, [0, 1, 3]] = wanted[1, [0, 5]] = True
    some = encoder.token_states(encodings, wanted)
    assert np.abs(some[wanted] - together[wanted]).max() < 1e-4 and not some[~wanted].any()
    embeddings = encoder.encode(texts)
    assert np.abs(embeddings - np.stack([encoder.encode([t])[0] for t in texts])).max() < 1e-5


def test_gelu_matches_the_exact_erf_form_in_float32() -> None:
    from scipy.special import erf

    from knowref60k.core.encoder import GELU_BLOCK, gelu

    generator = np.random.default_rng(0)
    # more values than one block, a ragged last block, both signs, tails and zero
    values = np.concatenate(
        [generator.normal(0, 3, GELU_BLOCK * 2 + 123), [-30.0, -8.0, -1e-6, 0.0, 1e-6, 8.0, 30.0]]
    ).astype(np.float32)
    exact = 0.5 * values.astype(np.float64) * (1 + erf(values.astype(np.float64) / np.sqrt(2)))
    result = gelu(values.reshape(-1, 2))
    assert result.dtype == np.float32 and result.shape == (len(values) // 2, 2)
    assert np.abs(result.reshape(-1) - exact).max() < 1e-6


@pytest.mark.integration
def test_debias_with_encoder_features_finds_a_planted_artefact(tmp_path: Path) -> None:
    generator = random.Random(7)
    problems = []
    for index in range(300):
        label = index % 2
        topic = "the weather was sunny and warm" if label else "the stock market crashed badly"
        filler = " ".join(generator.choices(WORDS, k=6))
        planted = index % 3 == 0
        # the filler first: sentences that begin alike would be taken for WinoGrande twins
        sentence = f"_ {filler} said {topic if planted else 'nothing'} to the other person."
        problems.append(
            Problem(f"e{index}", (sentence.replace("_", "Ann"), sentence.replace("_", "Bo")), label)
        )
    source = tmp_path / "train_e.tsv"
    write_winogrande_tsv(source, problems)
    report = debias(source, tmp_path / "out", {"k": 20, "seed": 0}, "encoder")
    assert report["features"]["name"] == "encoder"
    rows = pq.read_table(tmp_path / "out" / "aflite.parquet").to_pylist()
    removed = np.array([not row["aflite_kept"] for row in rows])
    planted = np.arange(300) % 3 == 0
    assert removed[planted].mean() > 2 * removed[~planted].mean()


def test_debias_command_prints_the_evidence_and_names_a_missing_file(tmp_path: Path) -> None:
    problems, _ = synthetic(300, 0.3, seed=8)
    source = tmp_path / "train_c.tsv"
    write_winogrande_tsv(source, problems)
    result = CliRunner().invoke(app, ["debias", str(source), "--out", str(tmp_path / "out"), "--k", "15"])
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert "AFLite on 300 problems (ngrams)" in printed and "probe accuracy" in printed
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"aflite.parquet", "report.json", "report.png"}
    missing = CliRunner().invoke(app, ["debias", str(tmp_path / "nope.tsv"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 2 and "nope.tsv: no such file or folder" in missing.output
    assert not (tmp_path / "x").exists()
    on_a_file = CliRunner().invoke(app, ["debias", str(source), "--out", str(source)])
    assert on_a_file.exit_code == 2 and "is a file, not a folder" in on_a_file.output
