"""The cache of slow, recomputable results: entries are read back equal, are missed when anything they
depend on changes, and a broken or unwritable cache costs only time."""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest

from knowref60k.core.cache import cache_key, cache_path, computing, read_cached, write_cached
from knowref60k.core.config import ExtractConfig


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "knowref60k"


def entries(folder: Path) -> list[Path]:
    """The cached entries, without the lock files taken while computing them."""
    return [path for path in folder.iterdir() if path.suffix != ".lock"]


def refuse(*_: Any, **__: Any) -> NoReturn:
    raise AssertionError("computed again, though the cache holds the result")


def test_an_entry_is_written_whole_and_read_back(cache_home: Path) -> None:
    path = cache_path("thing", cache_key("a", b"b"))
    assert path.parent == cache_home and read_cached(path) is None
    write_cached(path, b"payload")
    assert read_cached(path) == b"payload"
    assert [p.name for p in cache_home.iterdir()] == [path.name]  # no temporary file left


def test_the_key_changes_with_every_part() -> None:
    key = cache_key("a", b"b")
    assert key == cache_key("a", b"b")
    assert (
        len({key, cache_key("a", b"c"), cache_key("ab", b""), cache_key("a"), cache_key("a", b"b", "")}) == 5
    )


def test_a_cache_that_cannot_be_written_costs_only_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "knowref60k").write_text("a file where the folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cache_path("thing", "key")
    with caplog.at_level(logging.WARNING):
        write_cached(path, b"payload")
        assert read_cached(path) is None
    assert "not cached" in caplog.text and "unreadable" in caplog.text


@pytest.mark.integration
def test_the_gold_examples_come_back_from_the_cache_equal(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.quality import scorer_data
    from knowref60k.quality.gold import load_gold

    items, model_name = load_gold()[:80], resolve_model_name(None)
    parsed = scorer_data.examples(items, model_name)
    assert len(parsed) >= 10 and len(entries(cache_home)) == 1
    with monkeypatch.context() as patched:
        patched.setattr(scorer_data, "parse_examples", refuse)
        cached = scorer_data.examples(items, model_name)
    assert len(cached) == len(parsed)
    for one, other in zip(parsed, cached, strict=True):
        assert (one.item, one.row, one.features, one.error) == (
            other.item,
            other.row,
            other.features,
            other.error,
        )
        assert all(np.array_equal(a, b) for a, b in zip(one.context, other.context, strict=True))
    # Another item, or other settings: computed again, beside the first entry.
    first = items.index(parsed[0].item)
    changed = [*items[:first], dataclasses.replace(items[first], split="heldout"), *items[first + 1 :]]
    assert scorer_data.examples(changed, model_name)[0].item.split == "heldout"
    scorer_data.examples(items, model_name, dataclasses.replace(scorer_data.TRAINING_CONFIG, max_tokens=60))
    assert len(entries(cache_home)) == 3
    # A damaged entry is computed again, with a warning.
    key = scorer_data._cache_key(items, model_name, scorer_data.TRAINING_CONFIG)
    cache_path("gold-examples", key).with_suffix(".npz").write_bytes(b"not an archive")
    with caplog.at_level(logging.WARNING):
        assert len(scorer_data.examples(items, model_name)) == len(parsed)
    assert "unreadable" in caplog.text


@pytest.mark.integration
def test_an_extraction_result_comes_back_from_the_cache_equal(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from knowref60k.extract.nlp import resolve_model_name
    from knowref60k.quality import evaluation

    sentences = [
        "Roderick is painting a portrait of Madeline, but every pose exhausts her.",
        "Anna met Beth at the fair, because she wanted to see her again.",
        "no candidate here",
    ]
    config, model_name = ExtractConfig(), resolve_model_name(None)
    first = evaluation.extract_sentences("test", sentences, config, model_name)
    assert first.rows and first.stats.to_dict()["stages"]["read"]["in"] == 3
    with monkeypatch.context() as patched:
        patched.setattr(evaluation, "CandidateExtractor", refuse)
        again = evaluation.extract_sentences("test", sentences, config, model_name)
    assert (again.rows, again.quarantined, again.stats) == (first.rows, first.quarantined, first.stats)
    # Other settings or other stages: entries of their own. The rules' stages leave out only the score.
    rules = dataclasses.replace(config, person_detection="both")
    scored = evaluation.extract_sentences("test", sentences, rules, model_name)
    unscored = evaluation.extract_sentences(
        "test", sentences, rules, model_name, evaluation.stages_for(rules)
    )
    assert scored.rows and all(row["validity_score"] is not None for row in scored.rows)
    assert [{**row, "validity_score": None} for row in scored.rows] == unscored.rows
    assert len(entries(cache_home)) == 3
    for entry in entries(cache_home):
        entry.write_bytes(b"{")
    with caplog.at_level(logging.WARNING):
        assert evaluation.extract_sentences("test", sentences, config, model_name).rows == first.rows
    assert "unreadable" in caplog.text


def test_a_process_wanting_an_entry_being_computed_waits_and_reads_it(cache_home: Path) -> None:
    path = cache_path("thing", "key")
    first_holds, first_may_finish = threading.Event(), threading.Event()
    second_read: list[bytes | None] = []

    def first() -> None:
        with computing(path):
            first_holds.set()
            first_may_finish.wait()
            write_cached(path, b"computed once")

    def second() -> None:
        with computing(path):
            second_read.append(read_cached(path))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    first_holds.wait()
    threads[1].start()
    threads[1].join(timeout=0.5)
    assert threads[1].is_alive() and not second_read  # waiting, not reading a missing entry
    first_may_finish.set()
    for thread in threads:
        thread.join()
    assert second_read == [b"computed once"]


def test_without_a_lock_file_the_entry_is_computed_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "knowref60k").write_text("a file where the folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with caplog.at_level(logging.WARNING), computing(cache_path("thing", "key")):
        computed = True
    assert computed and "without a lock" in caplog.text
