"""Scoring language models on a release: the problems (blank, possessives, answers), the scoring checked
by hand on a model whose log-probabilities are known, the accuracy report, and `knowref60k evaluate-models`
against lm-evaluation-harness on the release's own task with a tiny, randomly initialised GPT-2 built
here (nothing is downloaded): the same items, the same log-likelihoods, the same accuracy.

torch, transformers and lm-eval live in `.venv-eval` (`make setup-eval`), never in the pipeline's
environment: the tests that need them run their part there, in a subprocess."""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import knowref60k
from knowref60k.core.errors import UserError
from knowref60k.evaluate.problems import Problem, demonstrations, load_problems
from knowref60k.evaluate.report import accuracy_with_interval, breakdown
from knowref60k.release.build import build_release
from knowref60k.release.winogrande_form import is_possessive, to_winogrande
from knowref60k_annotation.votes import VOTE_SCHEMA
from tests.conftest import REPO, missing_prerequisite, shared_file
from tests.test_release import synthetic_run

ROW = {
    "id": "x",
    "sentence": "Anna met Beth at noon, but she left.",
    "pronoun": "she",
    "pronoun_start": 27,
    "pronoun_end": 30,
    "name1": "Anna",
    "name2": "Beth",
    "label": 1,
    "annotation_strength": 5,
}


def test_a_release_row_becomes_a_winogrande_item() -> None:
    assert to_winogrande(ROW) == {
        "id": "x",
        "sentence": "Anna met Beth at noon, but _ left.",
        "option1": "Anna",
        "option2": "Beth",
        "answer": "2",
        "annotation_strength": 5,
    }
    sentence = "Anna met Beth at noon, but his car left."
    possessive = {**ROW, "sentence": sentence, "pronoun": "his", "pronoun_start": 27, "pronoun_end": 30}
    assert to_winogrande(possessive)["option1"] == "Anna's"


@pytest.mark.parametrize(
    ("pronoun", "following", "possessive"),
    [
        ("his", " car", True),
        ("hers", ".", True),
        ("her", " car broke", True),
        ("her", " the news", False),
        ("her", ".", False),
        ("Her", " to go", False),
        ("she", " left", False),
    ],
)
def test_possessive_pronouns_take_the_names_possessive(
    pronoun: str, following: str, possessive: bool
) -> None:
    assert is_possessive(pronoun, following) is possessive


def test_demonstrations_are_seeded_and_never_the_problem_itself() -> None:
    pool = [Problem(f"p{n}", f"A met B {n} but _ left.", ("A", "B"), n % 2) for n in range(10)]
    first = demonstrations(pool, pool[3], 4, seed=1)
    assert first == demonstrations(pool, pool[3], 4, seed=1) and pool[3] not in first
    assert first != demonstrations(pool, pool[3], 4, seed=2)
    with pytest.raises(UserError, match="the train split has 9"):
        demonstrations(pool, pool[3], 10, seed=1)


def test_the_report_breaks_accuracy_down_with_bootstrap_intervals() -> None:
    problems = [Problem(f"p{n}", "_ left.", ("A", "B"), 0, 4 + n % 2, "bm25 = 0") for n in range(10)]
    report = breakdown(problems, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1])
    assert report["all"]["accuracy"] == 0.6 and report["all"]["items"] == 10
    assert report["annotation_strength 4"]["accuracy"] == 0.6 and report["overlap bm25 = 0"]["items"] == 10
    low, high = report["all"]["ci95"]
    assert low < 0.6 < high and report["all"] == breakdown(problems, [0] * 6 + [1] * 4)["all"]
    assert accuracy_with_interval([True] * 5)["ci95"] == [1.0, 1.0]


@pytest.mark.integration
def test_the_benchmarks_are_read_with_their_answers() -> None:
    from tests.conftest import shared_file

    root = shared_file("data/benchmarks")
    kind, wsc = load_problems("wsc273", "test", root)
    assert kind == "benchmark" and len(wsc) == 273 and wsc[0].answer == 0
    assert wsc[0].options == ("city councilmen", "demonstrators")
    dpr = load_problems("dpr-test", "test", root)[1]
    assert {p.answer for p in dpr} == {0, 1} and all(p.sentence.count("_") >= 1 for p in dpr)
    assert len(load_problems("winogrande-dev", "test", root)[1]) > 1000


@pytest.mark.integration
def test_an_overlap_index_splits_the_problems_by_bm25(tmp_path: Path) -> None:
    """With `--overlap-index`, an item whose sentence the corpus holds is in `bm25 > 0`, the others in
    `bm25 = 0`."""
    from knowref60k.cli.app import app
    from tests.conftest import shared_file

    release = mixed_release(tmp_path)
    problems = load_problems(str(release), "test", shared_file("data/benchmarks"))[1]
    rows = {row["id"]: row for row in knowref60k.load_release(release, "test").to_pylist()}
    quoted = rows[problems[0].item_id]["sentence"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(f"{quoted}\nThe weather was fine all week.\nI like turtles.\n", encoding="utf-8")
    index = tmp_path / "index"
    assert CliRunner().invoke(app, ["overlap", "index", str(corpus), "--index", str(index)]).exit_code == 0
    split = load_problems(str(release), "test", shared_file("data/benchmarks"), index)[1]
    subsets = {problem.item_id: problem.overlap for problem in split}
    assert subsets[problems[0].item_id] == "bm25 > 0"
    assert set(subsets.values()) <= {"bm25 > 0", "bm25 = 0"} and len(subsets) == len(problems)
    unrelated, elsewhere = tmp_path / "unrelated.txt", tmp_path / "elsewhere"
    unrelated.write_text("The weather was fine all week.\nI like turtles.\n", encoding="utf-8")
    assert (
        CliRunner().invoke(app, ["overlap", "index", str(unrelated), "--index", str(elsewhere)]).exit_code
        == 0
    )
    none = load_problems(str(release), "test", shared_file("data/benchmarks"), elsewhere)[1]
    assert {problem.overlap for problem in none} == {"bm25 = 0"}


# ---- in the model-evaluation environment (.venv-eval: torch, transformers, lm-eval) ----

EVAL_PYTHON = REPO / ".venv-eval" / "bin" / "python"
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def in_eval_environment(*arguments: str, home: Path, timeout: float | None = 600) -> str:
    """Run `.venv-eval/bin/python ARGUMENTS` offline, with the test run's cache folder; its standard
    output. The timeout only stops a hang: a full rebuild passes None."""
    if not EVAL_PYTHON.is_file():
        missing_prerequisite("the model-evaluation environment is missing: `make setup-eval`")
    env = {**OFFLINE, "PATH": os.environ["PATH"], "HOME": str(home)}
    env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    result = subprocess.run(
        [str(EVAL_PYTHON), *arguments], cwd=REPO, capture_output=True, text=True, env=env, timeout=timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


BIGRAM_CHECK = """
import json, torch
from knowref60k.evaluate.problems import Problem
from knowref60k.evaluate.scoring import CAUSAL, Scorer

class Bigram:  # next-token logits depend only on the current token: a known table
    config = type("Config", (), {"max_position_embeddings": 64})()
    def __init__(self, table):
        self.table = table
    def __call__(self, ids):
        return type("Output", (), {"logits": self.table[ids]})()

class Words:
    def __init__(self, words):
        self.ids = {w: i for i, w in enumerate(words)}
    def encode(self, text, add_special_tokens=False):
        return [self.ids[w] for w in text.split()]

words = ["Anna", "Beth", "met", "but", "left", "."]
table = torch.zeros(len(words), len(words))
table[0, 4] = 2.0  # after "Anna", "left" is likelier than after "Beth"
scorer = Scorer(Bigram(table), Words(words), CAUSAL, "cpu")
problem = Problem("p", "Anna met Beth but _ left .", ("Anna", "Beth"), 0)
print(json.dumps(scorer.choose([problem.partial(0), problem.partial(1)], problem.rest())))
"""


@pytest.mark.integration
def test_partial_scoring_by_hand_on_a_model_of_known_probabilities(tmp_path: Path) -> None:
    choice, scores = orjson.loads(in_eval_environment("-c", BIGRAM_CHECK, home=tmp_path))
    # log P(left | Anna) + log P(. | left) = (2 - log(e^2 + 5)) + (0 - log 6); after Beth: -log 6 twice
    assert scores[0] == pytest.approx(2 - math.log(math.e**2 + 5) - math.log(6), abs=1e-6)
    assert scores[1] == pytest.approx(-2 * math.log(6), abs=1e-6)
    assert choice == 0


TINY_GPT2 = """
import sys, torch, transformers
from tokenizers import Tokenizer, models, pre_tokenizers

folder, sentences = sys.argv[1], sys.argv[2:]
split = pre_tokenizers.Whitespace()
words = sorted({word for s in sentences for word, _ in split.pre_tokenize_str(s)})
vocab = {word: i for i, word in enumerate(["[UNK]", "[EOS]", *words])}
tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = split
fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", eos_token="[EOS]")
torch.manual_seed(0)
config = transformers.GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=32, n_layer=2, n_head=2)
transformers.GPT2LMHeadModel(config).save_pretrained(folder)
fast.save_pretrained(folder)
"""


def mixed_release(tmp_path: Path) -> Path:
    """A release whose test split refers to Anna in some items and to Beth in others."""
    run = synthetic_run(tmp_path / "run", {f"t3x{n}": 2 for n in range(60)})
    votes = pq.read_table(run / "votes.parquet").to_pylist()
    for vote in votes:  # half the items refer to Beth, so that no constant answer gets them all right
        if vote["stage"] == "resolution" and sum(map(ord, vote["item_id"])) % 2:
            vote["choice"] = "antecedent2"
    pq.write_table(pa.Table.from_pylist(votes, schema=VOTE_SCHEMA), run / "votes.parquet")
    release = build_release(run, run / "votes.parquet", "v1", tmp_path / "releases").path
    assert {row["label"] for row in knowref60k.load_release(release, "test").to_pylist()} == {0, 1}
    return release


@pytest.mark.integration
def test_knowref60k_evaluate_and_lm_eval_agree_on_a_tiny_model(tmp_path: Path) -> None:
    release = mixed_release(tmp_path)
    sentences = [f"Anna met Beth in t3x{n} at {k}, but Anna left." for n in range(60) for k in range(2)]
    model = tmp_path / "model"
    in_eval_environment("-c", TINY_GPT2, str(model), *sentences, home=tmp_path)
    out = tmp_path / "ours"
    command = ["-m", "knowref60k", "evaluate-models", str(release), "--model", str(model), "--out", str(out)]
    in_eval_environment(*command, "--shots", "0,1", "--seeds", "2", "--batch-size", "5", home=tmp_path)
    ours = orjson.loads((out / "evaluation.json").read_bytes())
    assert ours["method"] == "causal partial scoring" and set(ours["results"]) == {"0-shot", "1-shot"}
    assert len(ours["results"]["1-shot"]["runs"]) == 2
    harness_out = tmp_path / "harness"
    in_eval_environment(
        "-m",
        "lm_eval",
        "run",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model}",
        "--include_path",
        str(release / "lm_eval"),
        "--tasks",
        "knowref60k",
        "--device",
        "cpu",
        "--output_path",
        str(harness_out),
        "--log_samples",
        home=tmp_path,
    )
    harness = orjson.loads(next(harness_out.rglob("results*.json")).read_bytes())
    zero_shot = ours["results"]["0-shot"]["runs"][0]
    assert zero_shot["all"]["items"] == harness["n-samples"]["knowref60k"]["effective"]
    assert round(harness["results"]["knowref60k"]["acc,none"], 4) == zero_shot["all"]["accuracy"]
    # Item by item: the same log-likelihood of each option (to float32 rounding), so the same answer.
    samples = next(harness_out.rglob("samples_knowref60k*.jsonl")).read_bytes().splitlines()
    assert sorted(orjson.loads(line)["doc"]["id"] for line in samples) == sorted(zero_shot["items"])
    for sample in map(orjson.loads, samples):
        theirs = [float(response[0]) for response in sample["filtered_resps"]]
        mine = zero_shot["items"][sample["doc"]["id"]]
        assert mine["scores"] == pytest.approx(theirs, abs=1e-4)
        assert mine["picked"] == (1 if theirs[1] > theirs[0] else 0)
    # The same command scores a known benchmark (its words are unknown to this model: it still runs).
    benchmark_out = tmp_path / "wsc"
    in_eval_environment(
        "-m",
        "knowref60k",
        "evaluate-models",
        "wsc273",
        "--benchmarks",
        str(shared_file("data/benchmarks")),
        "--model",
        str(model),
        "--out",
        str(benchmark_out),
        home=tmp_path,
    )
    wsc = orjson.loads((benchmark_out / "evaluation.json").read_bytes())
    assert wsc["items"] == 273 and wsc["results"]["0-shot"]["runs"][0]["all"]["items"] == 273


@pytest.mark.integration
def test_a_user_mistake_is_one_line(tmp_path: Path) -> None:
    from knowref60k.cli.app import app

    missing = CliRunner().invoke(app, ["evaluate-models", str(tmp_path / "nowhere"), "--model", "m"])
    assert missing.exit_code == 2 and "neither a release folder nor a benchmark" in missing.output
    release = mixed_release(tmp_path)
    shots = CliRunner().invoke(app, ["evaluate-models", str(release), "--model", "m", "--shots", "one"])
    assert shots.exit_code == 2 and "give whole numbers" in shots.output
    seeds = CliRunner().invoke(
        app, ["evaluate-models", str(release), "--model", "m", "--shots", "0,1", "--seeds", "0"]
    )
    assert seeds.exit_code == 2 and "--seeds 0: at least 1" in seeds.output
    # In the pipeline's environment there is no torch: the command says where it runs.
    no_torch = CliRunner().invoke(app, ["evaluate-models", str(release), "--model", str(tmp_path)])
    assert no_torch.exit_code == 2 and "make setup-eval" in no_torch.output
    in_eval = ["-m", "knowref60k", "evaluate-models", str(release), "--model", str(tmp_path / "none")]
    if EVAL_PYTHON.is_file():
        env = {**OFFLINE, "PATH": os.environ["PATH"], "HOME": str(tmp_path)}
        result = subprocess.run(
            [str(EVAL_PYTHON), *in_eval], cwd=REPO, capture_output=True, text=True, env=env
        )
        assert result.returncode == 2 and "no model that transformers can load" in result.stderr
        assert "Traceback" not in result.stderr
        on_gpu = [*in_eval[:-1], str(tmp_path), "--device", "cuda"]
        result = subprocess.run(
            [str(EVAL_PYTHON), *on_gpu], cwd=REPO, capture_output=True, text=True, env=env
        )
        assert result.returncode == 2 and "no CUDA GPU on this machine" in result.stderr
