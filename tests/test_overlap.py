"""The overlap audit, checked against the paper's Table 4 retrievals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from knowref60k.extract import CandidateExtractor
from knowref60k.overlap import ItemParser, OverlapIndex, analyse
from knowref60k.readers import iter_line_chunks, iter_lines, open_input
from tests.conftest import shared_file

TABLE_4 = [
    "Nope, our driver had a steel plate in his back and couldn't lift anything (although he was able to open "
    "the truck and put the rather heavy ramp in place, so I am not sure if he was unable or just lazy).",
    "Then I came across a box that weighed a ton - I couldn't even lift it it was so heavy",
    "1 man stopped to get it but he couldn't lift it because it was so heavy",
    "The man couldn't lift his son because he was so heavy",
]
WRONG_ORDER = "He was so heavy that the man and his son could not lift the box because of it"
QUERY = "The man couldn't lift his son because he was so heavy."
LONG = "Roderick couldn't lift Madeline up the long stairs last week because she was really heavy."


def test_analyser_drops_whoosh_stop_words_and_renumbers() -> None:
    assert analyse("The man couldn't lift it, and he was so heavy!") == [
        "man",
        "couldn",
        "t",
        "lift",
        "he",
        "was",
        "so",
        "heavy",
    ]


@pytest.mark.integration
def test_paper_table_4_ranking(tmp_path: Path, extractor: CandidateExtractor) -> None:
    path = shared_file("data/reddit/RC_sample_1M.zst")
    corpus: list[str] = []
    with open_input(path) as (_raw, stream):
        for chunk in iter_line_chunks(stream, path.name):
            corpus += [b for _, line in iter_lines(chunk) if 30 < len(b := orjson.loads(line)["body"]) < 300]
            if len(corpus) >= 3000:
                break
    index = OverlapIndex(tmp_path / "index")
    assert index.add([*corpus[:3000], *TABLE_4, WRONG_ORDER]) == 3005
    item = ItemParser(extractor.pipeline).parse([QUERY])[0]
    assert item is not None
    assert (item.pred_c, item.pred_q, item.connective, item.pronoun) == (
        "couldn't lift",
        "heavy",
        "because",
        "he",
    )
    scores = {text: score for score, text in index.search(item, 20)}
    ranked = [scores.get(text, 0.0) for text in TABLE_4]
    assert all(score > 0 for score in ranked), ranked
    assert ranked[3] > ranked[2] > ranked[1] > ranked[0], ranked
    assert scores.get(WRONG_ORDER, 0.0) == 0.0


def test_index_and_query_commands_resume_and_print_json(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*TABLE_4, WRONG_ORDER, "I like turtles."]) + "\n")
    runner = CliRunner()
    first = runner.invoke(app, ["overlap", "index", str(corpus), "--index", str(tmp_path / "ix")])
    assert first.exit_code == 0 and "sentences indexed" in first.output, first.output
    again = runner.invoke(app, ["overlap", "index", str(corpus), "--index", str(tmp_path / "ix")])
    assert again.exit_code == 0 and "sentences indexed" not in again.output  # finished files are skipped
    result = runner.invoke(app, ["overlap", "query", QUERY, "--index", str(tmp_path / "ix"), "--json"])
    assert result.exit_code == 0, result.output
    hits = [orjson.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert hits[0]["text"] == TABLE_4[3] and all(hit["score"] > 0 for hit in hits)
    assert WRONG_ORDER not in {hit["text"] for hit in hits}


def test_thirteen_gram_contamination_against_the_real_benchmarks() -> None:
    from knowref60k.contamination import ContaminationIndex, benchmark_sentences, ngrams

    index = ContaminationIndex(benchmark_sentences(shared_file("data/benchmarks")))
    copied = (
        "So the city councilmen refused the demonstrators a permit because the demonstrators feared violence."
    )
    assert index.match(copied) == "wsc273"
    assert (
        index.match("Sarah was a much better surgeon than Maria so Maria always got the easier cases, sadly.")
        == "winogrande"
    )
    assert index.match(QUERY) is None
    assert ngrams("One, two: THREE!", n=3) == {("one", "two", "three")}


def test_score_command_adds_scores_and_flags(tmp_path: Path, extractor: CandidateExtractor) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from knowref60k.cli import app
    from knowref60k.config import PrepareConfig
    from knowref60k.output import CANDIDATE_SCHEMA
    from knowref60k.prepare import Preparer
    from knowref60k.readers import LineChunk

    rows = extractor.process("t.txt", "text", LineChunk(1, (LONG + "\n").encode())).rows
    assert len(rows) == 1
    candidates = tmp_path / "t.candidates.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), candidates)
    with Preparer(PrepareConfig(), tmp_path / "dedup.sqlite") as preparer:
        items = preparer.prepare_file(candidates, tmp_path).items_path
    index = OverlapIndex(tmp_path / "ix")
    index.add([LONG, "I like turtles."])
    out = tmp_path / "scored.parquet"
    result = CliRunner().invoke(
        app,
        [
            "overlap",
            "score",
            str(items),
            "--index",
            str(tmp_path / "ix"),
            "--out",
            str(out),
            "--benchmarks",
            str(shared_file("data/benchmarks")),
        ],
    )
    assert result.exit_code == 0, result.output
    (row,) = pq.read_table(out).to_pylist()
    assert row["overlap_bm25"] > 0 and row["overlap_hit"].startswith("Roderick couldn't lift")
    assert row["benchmark_overlap"] is None and "share_above_0': 1.0" in result.output
