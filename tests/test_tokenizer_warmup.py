"""The tokenizer's warm-up (data/tokenizer/frequent_words.tsv): it may speed splitting up, never change it."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest
import spacy
from spacy.tokenizer import Tokenizer

from knowref60k.extract.nlp import (
    FREQUENT_WORDS,
    Pipeline,
    frequent_words,
    resolve_model_name,
)
from tests.conftest import cleaned_paragraphs


def test_frequent_words_are_single_words_most_frequent_first() -> None:
    words = frequent_words()
    rows = FREQUENT_WORDS.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "word\tcount"
    assert len(words) == len(rows) - 1 > 10_000
    assert words[:3] == ("the", "to", "a")
    assert len(set(words)) == len(words)
    assert not any(not word or any(character.isspace() for character in word) for word in words)
    counts = [int(row.rsplit("\t", 1)[1]) for row in rows[1:]]
    assert counts == sorted(counts, reverse=True)


def test_a_missing_word_list_only_skips_the_warm_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert frequent_words.__wrapped__(tmp_path / "frequent_words.tsv") == ()
    assert "not warmed up" in caplog.text


def tokens(nlp: spacy.language.Language, texts: list[str]) -> list[list[tuple[str, bool, bool]]]:
    """Every token's text, trailing space and punctuation flag, tokenized inside a memory zone as in
    extraction."""
    with nlp.memory_zone():
        return [
            [(token.text, bool(token.whitespace_), token.is_punct) for token in nlp.make_doc(text)]
            for text in texts
        ]


@pytest.mark.integration
def test_the_warm_cache_changes_no_token(reddit_slice: Path) -> None:
    model = resolve_model_name(None)
    texts = list(islice(cleaned_paragraphs(reddit_slice), 20_000))
    cold = spacy.load(model)
    warm = Pipeline(model).nlp
    assert isinstance(warm.tokenizer, Tokenizer)
    assert warm.tokenizer.max_cache_size >= len(frequent_words())
    assert tokens(warm, texts) == tokens(cold, texts)
