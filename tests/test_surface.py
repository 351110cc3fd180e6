"""The surface pre-filter drops paragraphs on their plain string, and never changes the candidates."""

from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from knowref60k.core.config import ExtractConfig
from knowref60k.extract.extractor import Extractor
from knowref60k.extract.nlp import CaselessPattern, WordFinder, resolve_model_name, trie_pattern
from knowref60k.extract.records import Paragraph
from knowref60k.extract.stages.surface import SurfaceFilter, bare_word_pattern, connective_pattern
from knowref60k.quality.evaluation import extract_sentences, load_reference
from tests.conftest import shared_file

KNOWREF = "data/knowref2019/knowref2019_reddit_items.json"


def paragraphs(sentence: str) -> list[Paragraph]:
    """The paragraphs extraction makes of a line of text."""
    from knowref60k.extract.cleaning import clean_text

    return [Paragraph(None, 0, text) for text in clean_text(sentence)]  # type: ignore[arg-type]


def test_connective_pattern_finds_every_word_of_every_connective() -> None:
    pattern = connective_pattern([",", "even though", "so"])
    text = "Even so, though"
    assert [text[slice(*m.span())] for m in pattern.finditer(text)] == ["Even", "so", ",", "though"]
    assert pattern.search("also") is None  # whole words only


class Context:
    """What the stage reads of an ExtractContext, without loading a spaCy pipeline."""

    def __init__(self, config: ExtractConfig) -> None:
        self.config = config
        self.target_pronouns = re.compile(r"\b(?:he|she|him|her|his|hers)\b", re.IGNORECASE)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Roderick is painting a portrait of Madeline, but every pose exhausts her.", None),
        ("roderick is painting a portrait of madeline, but every pose exhausts her.", "no_possible_sentence"),
        ("Roderick is painting Madeline and every single pose just exhausts her.", "no_possible_sentence"),
        ("Roderick paints Madeline, but her pose exhausts.", "no_possible_sentence"),  # too few spaces
        ("Roderick painted 3 portraits of Madeline, but a pose exhausts her.", "no_possible_sentence"),
        ("I saw 3 films. Roderick is painting a portrait of Madeline, but every pose exhausts her.", None),
        # A third-person pronoun before the connective: the names must come after it.
        (
            "Roderick told Madeline that it was late in the day, but the pose exhausts her.",
            "no_possible_sentence",
        ),
        ("It was late when Roderick was painting Madeline, but every pose exhausts her.", None),
        ("They say Roderick, who paints Madeline all day long, ignores her.", None),
        # Only a pronoun standing alone is trusted: spaCy may keep "it.com" or "his_x" as one token.
        ("Roderick told Madeline about it.com in the morning, but the pose exhausts her.", None),
        ("Roderick told Madeline about his_work in the morning, but the pose exhausts her.", None),
        (
            'Roderick told Madeline "(it)" was late in the day, but the pose exhausts her.',
            "no_possible_sentence",
        ),
        ("Roderick told Madeline it's late in the day, but the pose exhausts her.", "no_possible_sentence"),
    ],
)
def test_surface_checks(text: str, reason: str | None) -> None:
    stage = SurfaceFilter(Context(ExtractConfig()))  # type: ignore[arg-type]
    paragraph = Paragraph(None, 0, text)  # type: ignore[arg-type]
    assert stage.reject(paragraph) == reason
    off = SurfaceFilter(Context(ExtractConfig(surface_prefilter=False)))  # type: ignore[arg-type]
    assert off.reject(paragraph) is None


@pytest.mark.integration
def test_knowref_candidates_are_the_same_with_and_without_the_prefilter() -> None:
    """The pre-filter passes a paragraph on as it is or drops it, so the candidates are the same with it
    off exactly when the sentences whose paragraphs it drops yield none without it. (The extraction with
    it on is the evaluation's default mode, which the test run's cache holds once `make eval`'s fixture
    has run.)"""
    from knowref60k.extract.context import ExtractContext

    sentences = [item.sentence for item in load_reference(shared_file(KNOWREF))]
    config = ExtractConfig()
    model_name = resolve_model_name(config.model)
    whole = extract_sentences("knowref2019", sentences, config, model_name)
    assert len(whole.rows) > 2000
    stage = SurfaceFilter(ExtractContext(config, model_name))
    dropped = {sentence: sum(map(bool, map(stage.reject, paragraphs(sentence)))) for sentence in sentences}
    # The paragraphs dropped here are those the extraction's own stage dropped.
    assert whole.stats["surface"].dropped["no_possible_sentence"] == sum(dropped.values()) >= 20
    off = dataclasses.replace(config, surface_prefilter=False)
    assert extract_sentences("knowref2019", [s for s, n in dropped.items() if n], off, model_name).rows == []


@pytest.mark.integration
def test_reddit_candidates_are_the_same_with_and_without_the_prefilter(
    tmp_path: Path, reddit_slice: Path
) -> None:
    tables = {}
    for enabled in (True, False):
        config = dataclasses.replace(ExtractConfig(), surface_prefilter=enabled)
        with Extractor(config, workers=2) as extractor:
            report = extractor.extract_file(reddit_slice, tmp_path / str(enabled))
        tables[enabled] = pq.read_table(report.rows_path).to_pylist()
        stages = report.stats.to_dict()["stages"]
        dropped = stages["surface"]["dropped"]
        assert (dropped.get("no_possible_sentence", 0) > 0) == enabled, dropped
    assert tables[True] == tables[False]


def test_trie_pattern_matches_exactly_its_words() -> None:
    words = ["he", "her", "hers", "him", "his", "she", "she's", "he'll've", "hes"]
    pattern = re.compile(rf"\b{trie_pattern(words)}\b", re.IGNORECASE)
    for word in words:
        assert pattern.fullmatch(word) and pattern.fullmatch(word.upper()), word
    for other in ["h", "sh", "he'", "hera", "hi", "the", "shes's", "herself", ""]:
        assert not pattern.fullmatch(other), other
    text = "Then the heron saw Hers and THEM, where he'll've gone"
    plain = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    assert [m.start() for m in pattern.finditer(text)] == [m.start() for m in plain.finditer(text)]


def test_word_finder_finds_what_the_case_insensitive_pattern_finds() -> None:
    words = ["he", "her", "hers", "him", "his", "she", "she's", "he’s", "hes"]
    finder = WordFinder(words)
    exact = re.compile(rf"\b{trie_pattern(words)}\b", re.IGNORECASE)
    rng = random.Random(0)
    alphabet = [*"hHeEsSrRiImM '’_-.,9aX\n", "é", "ſ"]
    for _ in range(50_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        expected = [match.span() for match in exact.finditer(text)]
        assert [match.span() for match in finder.finditer(text)] == expected, repr(text)
        start = rng.randint(0, len(text))
        found, wanted = finder.search(text, start), exact.search(text, start)
        assert (found and found.span()) == (wanted and wanted.span()), (repr(text), start)
    assert finder.search("So SHE said") and not finder.search("the shed")


def test_caseless_patterns_match_as_ignorecase_does() -> None:
    config = ExtractConfig()
    patterns = [
        connective_pattern(config.connectives),
        bare_word_pattern({*config.blocking_pronouns, "he", "she"}),
        CaselessPattern(r"(?:^|\s)i(?:t|f)\b"),
    ]
    rng = random.Random(0)
    alphabet = [*"itIThHeEfF ,;'\"().!_9\n", "é", "ſ", "İ", "so", "SO", "when", "Though", "he's"]
    for _ in range(30_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        start = rng.randint(0, len(text))
        for pattern in patterns:
            wanted = [match.span() for match in pattern.exact.finditer(text, start)]
            assert [match.span() for match in pattern.finditer(text, start)] == wanted, repr(text)
            found = pattern.search(text, start)
            assert (found and found.span()) == (wanted[0] if wanted else None), repr(text)


def test_a_caseless_pattern_must_be_written_in_lower_case() -> None:
    with pytest.raises(ValueError, match="capital"):
        CaselessPattern(r"\bHe\b")
    assert CaselessPattern(r"\bhe\S").search("HE!")  # escapes such as \S are not letters of the text


def reference_may_hold_a_candidate(stage: SurfaceFilter, text: str) -> bool:
    """The rule as stated, connective by connective: slow, and independent of the stage's shortcuts."""
    if text.count(" ") < stage.min_spaces:
        return False
    blocking_ends = [0, *(match.end() for match in stage.blocking_words.exact.finditer(text))]
    for connective in stage.connectives.exact.finditer(text):
        if stage.pronouns.search(text, connective.end()) is None:
            continue
        start = max(end for end in blocking_ends if end <= connective.start())
        words = re.finditer(r"[^\W\d_]+", text[start : connective.start()])
        if sum(len(word.group()) > 1 and word.group()[0].isupper() for word in words) >= 2:
            return True
    return False


def test_the_surface_rule_holds_on_random_sentences() -> None:
    stage = SurfaceFilter(Context(ExtractConfig(min_spaces=3)))  # type: ignore[arg-type]
    rng = random.Random(1)
    words = [
        *"he He HE she Tom Ann Bob Mary it It they his her so SO if , ; the cat x when though".split(),
        "Because",
        "(he)",
        "he's",
        "it.",
        "(it",
        "Zoë",
        "José",
        "é",
    ]
    kept = 0
    for _ in range(40_000):
        separator = rng.choice([" ", " ", "  ", ", ", ""])
        text = separator.join(rng.choice(words) for _ in range(rng.randint(1, 20)))
        expected = reference_may_hold_a_candidate(stage, text)
        assert stage._may_hold_a_candidate(text) == expected, repr(text)
        kept += expected
    assert 2_000 < kept < 38_000  # both outcomes are exercised


def test_capitalised_words_are_found_alike_in_ascii_and_other_text() -> None:
    # Appending " é" sends a text down the general path without changing its capitalised words.
    rng = random.Random(0)
    alphabet = [*"AbCdeZz '-_.9\n", "Ab", "Cd"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        start = rng.choice([0, *(i + 1 for i, c in enumerate(text) if c == " ")])
        fast = SurfaceFilter._second_capitalised_word_end(text, start)
        assert fast == SurfaceFilter._second_capitalised_word_end(text + " é", start), (repr(text), start)
    assert SurfaceFilter._second_capitalised_word_end("So Ab said Cd", 0) == len("So Ab")
