"""De-duplication and gender perturbation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.core.names import load_first_names, perturbation_pool
from knowref60k.extract.pipeline import CandidateExtractor
from knowref60k.ingest.readers import LineChunk, iter_line_chunks, iter_lines, open_input
from knowref60k.prepare.dedup import DedupIndex, normalise
from knowref60k.prepare.perturb import draw_names, item_seed, perturb
from knowref60k.prepare.preparer import Preparer
from knowref60k.settings.effective import RunConfig
from tests.conftest import shared_file

POOLS = {gender: perturbation_pool(gender, 0.1) for gender in ("male", "female")}
SENTENCES = [
    "Dan played tennis with Danny all afternoon because he was bored at home.",
    "Roderick is painting a portrait of Madeline, but every pose exhausts her.",
    "Jessica tried to call Michael last night, but he never picked up the phone.",
    "Daniel Day-Lewis worked with Tony Parker for years, but he never liked it.",
]


def candidates(
    extractor: CandidateExtractor, sentences: list[str], source: str = "s.txt"
) -> list[dict[str, Any]]:
    data = "\n".join(sentences).encode() + b"\n"
    return extractor.process(source, "text", LineChunk(1, data)).rows


def handmade(
    sentence: str, first: str, second: str, pronoun: str, gender: str, cid: str = "c1"
) -> dict[str, Any]:
    """A candidate row with offsets found by word boundaries (first occurrence of each)."""

    def span(word: str, after: int = 0) -> tuple[int, int]:
        match = re.compile(rf"\b{re.escape(word)}\b").search(sentence, after)
        assert match is not None
        return match.start(), match.end()

    a1, a2 = span(first), span(second)
    p = span(pronoun, a2[1])
    return {
        "candidate_id": cid,
        "sentence": sentence,
        "source_file": "hand",
        "comment_id": cid,
        "antecedent1": first,
        "antecedent1_start": a1[0],
        "antecedent1_end": a1[1],
        "antecedent2": second,
        "antecedent2_start": a2[0],
        "antecedent2_end": a2[1],
        "pronoun": pronoun,
        "pronoun_start": p[0],
        "pronoun_end": p[1],
        "pronoun_gender": gender,
    }


def check_item(row: dict[str, Any], item: Any) -> None:
    sentence = item.sentence
    assert sentence[item.name1_start : item.name1_end] == item.name1
    assert sentence[item.name2_start : item.name2_end] == item.name2
    assert sentence[item.pronoun_start : item.pronoun_end] == row["pronoun"]
    assert item.name1 != item.name2
    words = set(re.findall(r"[\w-]+", sentence))
    for field in ("antecedent1", "antecedent2"):
        for word in re.findall(r"[\w-]+", row[field]):
            assert word not in words, f"{word!r} of {row[field]!r} left in {sentence!r}"
    first_names = load_first_names(row["pronoun_gender"])
    assert item.name1 in first_names and item.name2 in first_names


@pytest.mark.integration
def test_perturbation_offsets_names_and_gender(extractor: CandidateExtractor) -> None:
    rows = candidates(extractor, SENTENCES)
    assert len(rows) == len(SENTENCES)
    for row in rows:
        check_item(row, perturb(row, POOLS, 60_000))


def test_dan_and_danny_are_replaced_by_offsets_not_by_search() -> None:
    row = handmade(
        "Dan played tennis with Danny all afternoon because he was bored.", "Dan", "Danny", "he", "male"
    )
    item = perturb(row, POOLS, 60_000)
    check_item(row, item)
    assert item.sentence == "Moises played tennis with Blake all afternoon because he was bored."


def test_later_mentions_of_an_antecedent_get_its_new_name() -> None:
    row = handmade(
        "Dan played tennis with Danny all afternoon because Dan said he was bored.",
        "Dan",
        "Danny",
        "he",
        "male",
    )
    item = perturb(row, POOLS, 60_000)
    check_item(row, item)
    first, second = item.name1, item.name2
    assert (
        item.sentence
        == f"{first} played tennis with {second} all afternoon because {first} said he was bored."
    )
    surname = handmade(
        "Dan Marino beat Tom Brady twice, but Brady said he was the better passer.",
        "Dan Marino",
        "Tom Brady",
        "he",
        "male",
    )
    item = perturb(surname, POOLS, 60_000)
    check_item(surname, item)
    assert (
        item.sentence
        == f"{item.name1} beat {item.name2} twice, but {item.name2} said he was the better passer."
    )


def test_titles_and_common_words_of_a_name_are_not_mentions_of_it() -> None:
    row = handmade(
        'President Obama met Dwayne "The Rock" Johnson, but the President said he was late to The Office.',
        "President Obama",
        'Dwayne "The Rock" Johnson',
        "he",
        "male",
    )
    item = perturb(row, POOLS, 60_000)
    assert item.sentence.endswith("but the President said he was late to The Office.")
    assert item.sentence[item.pronoun_start : item.pronoun_end] == "he"


def test_a_new_name_never_equals_the_other_original_name() -> None:
    for seed in range(300):
        row = handmade(
            "James met John at the bar, but he left early.", "James", "John", "he", "male", f"c{seed}"
        )
        item = perturb(row, POOLS, seed)
        assert {item.name1, item.name2}.isdisjoint({"James", "John"})
        check_item(row, item)


def test_article_and_possessive_are_fixed() -> None:
    row = handmade(
        "I saw the Prince talk to James' sister, but she ignored him.", "Prince", "James", "she", "female"
    )
    item = perturb(row, POOLS, 60_000)
    assert item.sentence == "I saw Ann talk to Stephanie's sister, but she ignored him."
    check_item(row, item)


def test_draws_are_seeded_frequency_weighted_and_portable() -> None:
    # Pinned: the same names on any machine, Python or platform (sha256-derived integer draws).
    seed = item_seed(60_000, "abc")
    assert seed == 2433506665474472253 and seed != item_seed(60_001, "abc")
    assert draw_names(POOLS["female"], seed, frozenset()) == ("Betty", "Mary")
    assert draw_names(POOLS["male"], item_seed(0, "xyz"), frozenset()) == ("Thomas", "David")
    assert draw_names(POOLS["female"], seed, frozenset({"betty"})) == ("Mary", "Mercedes")
    counts: dict[str, int] = {}
    for i in range(3000):
        name = draw_names(POOLS["male"], item_seed(0, str(i)), frozenset())[0]
        counts[name] = counts.get(name, 0) + 1
    assert counts.get("James", 0) > counts.get("Roderick", 0) * 10  # 3.3% vs 0.04% in the Census


def test_excluded_names_are_never_drawn() -> None:
    for gender in ("male", "female"):
        names = set(POOLS[gender].names)
        assert {"Will", "May", "Hope", "Mark", "Angel", "Jordan"}.isdisjoint(names)


def test_normalisation_folds_case_space_punctuation_and_unicode() -> None:
    assert normalise("Dan said: “HELLO”,   world!") == normalise("dan said hello world")


def dedup_row(sentence: str, cid: str, source: str = "RC_x") -> dict[str, Any]:
    return {"candidate_id": cid, "sentence": sentence, "source_file": source, "comment_id": cid}


def test_exact_and_near_duplicates_are_kept_once_across_runs(tmp_path: Path) -> None:
    config = PrepareConfig()
    first = "Dan played tennis with Danny all afternoon because he was bored at home."
    with DedupIndex(tmp_path / "index.sqlite", config) as index:
        assert index.decide(dedup_row(first, "a")).is_kept
        index.commit()
    with DedupIndex(tmp_path / "index.sqlite", config) as index:
        exact = index.decide(
            dedup_row("dan played TENNIS with danny, all afternoon because he was bored at home", "b")
        )
        near = index.decide(dedup_row(first.replace("at home", "at home again"), "c"))
        other = index.decide(dedup_row("Mary met Susan at the market, but she did not say hello.", "d"))
        assert (exact.kind, exact.kept_id) == ("exact", "a")
        assert (near.kind, near.kept_id) == ("near", "a") and near.similarity >= 0.8
        assert other.is_kept
        assert index.decide(dedup_row(first, "a")).is_kept  # asking again is not a copy of itself
        index.commit()
        assert [copy["candidate_id"] for copy in index.copies_of("a")] == ["b", "c"]


def candidates_file(path: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows as a candidates file; the connective is the sentence's first comma."""
    extra = {"line_number": 1, "link_id": "t3_a", "subreddit": "s", "created_utc": 0, "connective": ","}
    full = []
    for row in rows:
        comma = row["sentence"].index(",")
        full.append({**extra, "connective_start": comma, "connective_end": comma + 1, **row})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(full, schema=CANDIDATE_SCHEMA), path)
    return path


def test_a_failure_mid_file_rolls_back_the_dedup_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import knowref60k.prepare.preparer

    sentences = [f"Paul met Mary on day {n}, but she left early." for n in range(5)]
    rows = [handmade(s, "Paul", "Mary", "she", "female", f"c{n}") for n, s in enumerate(sentences)]
    january = candidates_file(tmp_path / "c" / "RC_2099-01.candidates.parquet", rows)
    february = candidates_file(
        tmp_path / "c" / "RC_2099-02.candidates.parquet", [{**rows[1], "candidate_id": "f1"}]
    )
    calls = {"n": 0}
    working = knowref60k.prepare.stages.perturb.perturb

    def fails_on_the_third(*args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        return working(*args)

    monkeypatch.setattr(knowref60k.prepare.stages.perturb, "perturb", fails_on_the_third)
    index_path = tmp_path / "dedup.sqlite"
    with Preparer(RunConfig.load().prepare, index_path) as preparer:
        with pytest.raises(RuntimeError, match="disk full"):
            preparer.prepare_file(january, tmp_path / "items")
        assert [p.name for p in (tmp_path / "items").iterdir()] == []  # no items file, not even a partial
        # The same preparer goes on with the next file: January's two decided items are forgotten, so
        # February's copy of one of them is kept, not counted as a duplicate of an item never written.
        monkeypatch.setattr(knowref60k.prepare.stages.perturb, "perturb", working)
        assert preparer.prepare_file(february, tmp_path / "items").rows == 1
        rerun = preparer.prepare_file(january, tmp_path / "items")
    assert (rerun.rows, rerun.stats["dedup"].dropped) == (4, {"exact_duplicate": 1})
    with DedupIndex(index_path, PrepareConfig()) as index:
        kept = [row[0] for row in index.db.execute("SELECT candidate_id FROM kept ORDER BY rowid")]
    assert kept == ["f1", "c0", "c2", "c3", "c4"]


def test_index_refuses_other_settings(tmp_path: Path) -> None:
    with DedupIndex(tmp_path / "i.sqlite", PrepareConfig()):
        pass
    with pytest.raises(UserError, match="other de-duplication settings"):
        DedupIndex(tmp_path / "i.sqlite", PrepareConfig(near_duplicate_threshold=0.5))


def sentence_containing(body: str, phrase: str, extractor: CandidateExtractor) -> str:
    return next(s.text for s in extractor.pipeline.split(body).sents if phrase in s.text)


@pytest.mark.integration
def test_near_duplicates_of_real_copypasta(tmp_path: Path, extractor: CandidateExtractor) -> None:
    """Real comments of RC_sample_1M.zst that repeat another comment with small changes."""
    pairs = {  # line numbers in the dump, and the phrase the repeated sentence contains
        (426, 555): "playback feature of Google Video",
        (668, 669): "shoplifting and theft at stores like this",
        (4098, 4102): "posted links that only work inside",
        (5540, 5591): "threatening unbelievers and encouraging suicide",
    }
    wanted = {line for pair in pairs for line in pair}
    bodies: dict[int, str] = {}
    path = shared_file("data/reddit/RC_sample_1M.zst")
    with open_input(path) as (_raw, stream):
        for chunk in iter_line_chunks(stream, path.name):
            bodies.update((n, orjson.loads(line)["body"]) for n, line in iter_lines(chunk) if n in wanted)
            if len(bodies) == len(wanted):
                break
    with DedupIndex(tmp_path / "index.sqlite", PrepareConfig()) as index:
        for (original, copy), phrase in pairs.items():
            first = sentence_containing(bodies[original], phrase, extractor)
            second = sentence_containing(bodies[copy], phrase, extractor)
            assert normalise(first) != normalise(second)
            assert index.decide(dedup_row(first, f"L{original}")).is_kept
            decision = index.decide(dedup_row(second, f"L{copy}"))
            assert (decision.kind, decision.kept_id) == ("near", f"L{original}"), (first, second)


def write_candidates(path: Path, rows: list[dict[str, Any]]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), path)
    return path


@pytest.mark.integration
def test_prepare_is_deterministic_skips_finished_files_and_dedups_across_files(
    tmp_path: Path, extractor: CandidateExtractor
) -> None:
    rows = candidates(extractor, SENTENCES, "RC_2099-01.txt")
    january = write_candidates(tmp_path / "RC_2099-01.candidates.parquet", rows)
    repeat = [
        {**row, "candidate_id": f"feb-{i}", "source_file": "RC_2099-02.txt"} for i, row in enumerate(rows[:2])
    ]
    february = write_candidates(tmp_path / "RC_2099-02.candidates.parquet", repeat)
    outputs = []
    for run in ("one", "two"):
        # The handmade sentences score 0.82 to 0.95: all sent, whatever the default threshold.
        with Preparer(PrepareConfig(validity_threshold=0.5), tmp_path / run / "index.sqlite") as preparer:
            report = preparer.prepare_file(january, tmp_path / run)
            assert (report.rows, report.skipped) == (len(SENTENCES), False)
            assert preparer.prepare_file(january, tmp_path / run).skipped
            second = preparer.prepare_file(february, tmp_path / run)
            assert second.rows == 0
            assert second.stats["dedup"].dropped == {"exact_duplicate": 2}
        outputs.append(report.rows_path.read_bytes())
    assert outputs[0] == outputs[1]
    items = pq.read_table(tmp_path / "one" / "RC_2099-01.items.parquet").to_pylist()
    for item in items:
        sentence = item["perturbed_sentence"]
        assert sentence[item["name1_start"] : item["name1_end"]] == item["name1"]
        assert sentence[item["name2_start"] : item["name2_end"]] == item["name2"]
        assert sentence[item["perturbed_pronoun_start"] : item["perturbed_pronoun_end"]] == item["pronoun"]
        assert item["perturbation_seed"] == item_seed(PrepareConfig().seed, item["candidate_id"])


def test_not_a_candidates_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.candidates.parquet"
    bad.write_text("not parquet")
    with (
        Preparer(RunConfig.load().prepare, tmp_path / "i.sqlite") as preparer,
        pytest.raises(UserError, match="not a Parquet"),
    ):
        preparer.prepare_file(bad, tmp_path / "out")
    assert not (tmp_path / "out" / "x.items.parquet").exists()


def test_items_whose_other_gender_pronoun_would_dangle_are_dropped_and_counted(tmp_path: Path) -> None:
    dangling = "Hillary was smarter than Obama, because she did not play by the rules and he did."
    fine = "Paul met Mary on the first day, but she left early and her bag stayed."
    rows = [
        handmade(dangling, "Hillary", "Obama", "she", "female", "dangling"),
        handmade(fine, "Paul", "Mary", "she", "female", "fine"),
    ]
    source = candidates_file(tmp_path / "c" / "RC_2099-05.candidates.parquet", rows)
    with Preparer(RunConfig.load().prepare, tmp_path / "index.sqlite") as preparer:
        report = preparer.prepare_file(source, tmp_path / "items")
    assert report.stats["pronoun_gender"].dropped == {"other_gender_pronoun": 1}
    assert [item["candidate_id"] for item in pq.read_table(report.rows_path).to_pylist()] == ["fine"]


def test_held_back_candidates_are_sent_against_the_index_they_were_held_back_against(tmp_path: Path) -> None:
    """The documented command (`prepare OUT/items/X.below-threshold.parquet --out OUT/items`) finds the
    run's index (OUT/dedup-index.sqlite) from the prepare report beside the file, not a new one in items/."""
    from knowref60k.cli.prepare import held_back_against

    items = tmp_path / "items"
    items.mkdir()
    run_index = tmp_path / "dedup-index.sqlite"
    for stem in ("RC_a", "RC_b"):
        (items / f"{stem}.below-threshold.parquet").write_bytes(b"")
        (items / f"{stem}.prepare.json").write_bytes(orjson.dumps({"index": str(run_index)}))
    held_back = sorted(items.glob("*.below-threshold.parquet"))
    assert held_back_against(held_back) == run_index
    (items / "RC_b.prepare.json").write_bytes(orjson.dumps({"index": str(tmp_path / "other.sqlite")}))
    assert held_back_against(held_back) is None  # two indexes: the command's own default, or --index
    assert held_back_against([items / "RC_a.prepare.json"]) is None  # not a held-back file
