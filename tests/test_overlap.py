"""The overlap audit, checked against the paper's Table 4 retrievals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from knowref60k.extract.pipeline import CandidateExtractor
from knowref60k.ingest.readers import iter_line_chunks, iter_lines, open_input
from knowref60k.overlap.index import ItemParser, OverlapIndex, analyse
from knowref60k.settings.effective import RunConfig
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
    index = OverlapIndex(tmp_path / "index", create=True)
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
    # The paper's Table 4 gives 18.9 / 26.5 / 36.1 / 43.0 (Whoosh); ours, with tantivy, for the record:
    assert ranked == pytest.approx([18.73, 19.20, 31.97, 44.86], abs=0.01)
    assert scores.get(WRONG_ORDER, 0.0) == 0.0


@pytest.mark.integration
def test_index_and_query_commands_resume_and_print_json(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*TABLE_4, WRONG_ORDER, "I like turtles."]) + "\n")
    runner = CliRunner()
    first = runner.invoke(app, ["overlap", "index", str(corpus), "--index", str(tmp_path / "ix")])
    assert first.exit_code == 0 and "already indexed" not in first.output, first.output
    again = runner.invoke(app, ["overlap", "index", str(corpus), "--index", str(tmp_path / "ix")])
    assert again.exit_code == 0 and "already indexed" in again.output
    assert len(OverlapIndex(tmp_path / "ix")) == 6
    result = runner.invoke(app, ["overlap", "query", QUERY, "--index", str(tmp_path / "ix"), "--json"])
    assert result.exit_code == 0, result.output
    hits = [orjson.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert hits[0]["text"] == TABLE_4[3] and all(hit["score"] > 0 for hit in hits)
    assert WRONG_ORDER not in {hit["text"] for hit in hits}


@pytest.mark.integration
def test_thirteen_gram_contamination_against_the_real_benchmarks() -> None:
    from knowref60k.overlap.benchmarks import read_benchmarks
    from knowref60k.overlap.contamination import ContaminationIndex, benchmark_sentences, ngrams

    index = ContaminationIndex(benchmark_sentences(read_benchmarks(shared_file("data/benchmarks"))))
    copied = (
        "So the city councilmen refused the demonstrators a permit because the demonstrators feared violence."
    )
    assert index.match(copied) == "wsc273"
    assert (
        index.match("Sarah was a much better surgeon than Maria so Maria always got the easier cases, sadly.")
        == "winogrande-dev"
    )
    assert index.match(QUERY) is None
    assert ngrams("One, two: THREE!", n=3) == {("one", "two", "three")}


@pytest.mark.integration
def test_score_command_adds_scores_and_flags(tmp_path: Path, extractor: CandidateExtractor) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from knowref60k.cli.app import app
    from knowref60k.core.io import CANDIDATE_SCHEMA
    from knowref60k.ingest.readers import LineChunk
    from knowref60k.prepare.preparer import Preparer

    rows = extractor.process("t.txt", "text", LineChunk(1, (LONG + "\n").encode())).rows
    assert len(rows) == 1
    candidates = tmp_path / "t.candidates.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), candidates)
    with Preparer(RunConfig.load().prepare, tmp_path / "dedup.sqlite") as preparer:
        items = preparer.prepare_file(candidates, tmp_path).rows_path
    index = OverlapIndex(tmp_path / "ix", create=True)
    index.add([LONG, "I like turtles."])
    out = tmp_path / "scored.parquet"
    arguments = ["overlap", "score", str(items), "--index", str(tmp_path / "ix")]
    arguments += ["--benchmarks", str(shared_file("data/benchmarks"))]
    result = CliRunner().invoke(app, [*arguments, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (row,) = pq.read_table(out).to_pylist()
    assert row["overlap_bm25"] > 0 and row["overlap_hit"].startswith("Roderick couldn't lift")
    assert row["benchmark_overlap"] is None and "share_above_0': 1.0" in result.output
    folder = tmp_path / "a-folder"
    folder.mkdir()
    refused = CliRunner().invoke(app, [*arguments, "--out", str(folder)])
    assert refused.exit_code == 2 and f"cannot write {folder}: it is a folder" in refused.output
    assert "Traceback" not in refused.output and not list(folder.iterdir())


def test_skip_lines_drops_done_lines_across_chunk_boundaries() -> None:
    from knowref60k.ingest.readers import LineChunk, skip_lines

    chunks = [LineChunk(1, b"a\nb\nc\n"), LineChunk(4, b"d\ne\n"), LineChunk(6, b"f")]
    assert list(skip_lines(chunks, 2)) == [LineChunk(3, b"c\n"), LineChunk(4, b"d\ne\n"), LineChunk(6, b"f")]
    assert list(skip_lines(chunks, 5)) == [LineChunk(6, b"f")]
    assert list(skip_lines(chunks, 0)) == chunks


def _indexed_texts(directory: Path) -> list[str]:
    index = OverlapIndex(directory)
    searcher = index.index.searcher()
    hits = searcher.search(index.tantivy.Query.all_query(), 100_000).hits
    return sorted(searcher.doc(address)["text"][0].decode() for _, address in hits)


@pytest.mark.integration
def test_corpus_indexing_resumes_after_a_crash_without_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extractor: CandidateExtractor
) -> None:
    from knowref60k.overlap.corpus import CorpusIndexer

    lines = [
        orjson.dumps({"text": f"Sentence number {i} is here. And a second one {i}."}) for i in range(300)
    ]
    lines[120] = b'{"text": broken'
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\n".join(lines) + b"\n")
    model = extractor.pipeline.model_name
    with CorpusIndexer(tmp_path / "whole", model, workers=1, batch=50) as indexer:
        whole = indexer.add_file(corpus)
    assert (whole.lines, whole.sentences, whole.indexed, whole.stats.quarantined) == (300, 598, 598, 1)

    saves = 0
    original_save = CorpusIndexer._save

    def crash_on_third_save(self: CorpusIndexer, source: str, state: dict[str, object]) -> None:
        nonlocal saves
        saves += 1
        if saves == 3:  # the third batch is in the index, its progress is not recorded
            raise RuntimeError("killed")
        original_save(self, source, state)

    monkeypatch.setattr(CorpusIndexer, "_save", crash_on_third_save)
    with pytest.raises(RuntimeError), CorpusIndexer(tmp_path / "resumed", model, 1, 50, 1000) as indexer:
        indexer.add_file(corpus)
    monkeypatch.setattr(CorpusIndexer, "_save", original_save)
    with CorpusIndexer(tmp_path / "resumed", model, workers=1, batch=50) as indexer:
        resumed = indexer.add_file(corpus)
        assert indexer.add_file(corpus).skipped
    assert (resumed.lines, resumed.indexed) == (300, 598)
    assert _indexed_texts(tmp_path / "resumed") == _indexed_texts(tmp_path / "whole")
    quarantined = (tmp_path / "resumed" / "quarantine" / "corpus.jsonl.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["line_number"] for line in quarantined] == [121]

    with corpus.open("ab") as handle:
        handle.write(orjson.dumps({"body": "A comment added later."}) + b"\n")
    with CorpusIndexer(tmp_path / "resumed", model, workers=1, batch=50) as indexer:
        changed = indexer.add_file(corpus)
    assert not changed.skipped and len(OverlapIndex(tmp_path / "resumed")) == 599


@pytest.mark.integration
def test_benchmark_items_are_read_and_parsed(extractor: CandidateExtractor) -> None:
    from knowref60k.overlap.benchmarks import read_benchmarks

    sets = read_benchmarks(shared_file("data/benchmarks"))
    assert {name: len(items) for name, items in sets.items()} == {
        "wsc273": 273,
        "winogrande-dev": 1267,
        "dpr-train": 1322,
        "dpr-test": 564,
    }
    trophy, sniper = sets["wsc273"][2], sets["dpr-test"][0]
    assert sniper.sentence == "The sniper shot the terrorist because _ was a bad guy."
    parser = ItemParser(extractor.pipeline)
    first, second = parser.parse([trophy.marked(), sniper.marked()])
    assert first is not None and second is not None
    assert (first.e1, first.pred_c, first.connective, first.e2, first.pronoun, first.pred_q) == (
        "The trophy",
        "doesn't fit",
        "because",
        "the brown suitcase",
        "",
        "large",
    )
    assert (second.e1, second.e2, second.pred_q) == ("The sniper", "the terrorist", "bad guy")


@pytest.mark.integration
def test_benchmarks_command_writes_scores_report_and_figure(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    index = OverlapIndex(tmp_path / "ix", create=True)
    index.add(["My trophy doesn't fit into the suitcase because it is too large.", "I like turtles."])
    out = tmp_path / "bench"
    args = ["overlap", "benchmarks", "--index", str(tmp_path / "ix"), "--out", str(out), "--set", "wsc273"]
    result = CliRunner().invoke(app, [*args, "--benchmarks", str(shared_file("data/benchmarks"))])
    assert result.exit_code == 0, result.output
    report = orjson.loads((out / "report.json").read_bytes())["sets"]["wsc273"]
    assert (report["items"], report["share_above_0"], len(report["curve"])) == (273, round(1 / 273, 4), 51)
    assert (out / "overlap.png").read_bytes().startswith(b"\x89PNG")
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "wsc273.parquet").to_pylist()
    large = [row for row in rows if row["sentence"].endswith("is too large.")]
    assert large[0]["overlap_bm25"] > 0 and large[0]["overlap_hit"].startswith("My trophy")


def test_a_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knowref60k.cli.app import app

    result = CliRunner().invoke(app, ["overlap", "query", QUERY, "--index", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no overlap index there" in result.output
    assert not (tmp_path / "nowhere").exists()
