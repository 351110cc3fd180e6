"""Overlap audit (KnowRef-60K paper, section 3): how close does an item come to a sentence of a
pretraining corpus? Query = the two predicates' words, in order, within 10 positions, AND any of
the content words (the two antecedents, the connective, the pronoun), scored with BM25.

The paper used Whoosh (lower-casing word tokenizer, a short stop list that renumbers positions);
this module indexes the same analysed tokens with tantivy, whose BM25 uses k1 = 1.2 and b = 0.75.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from spacy.tokens import Doc

from knowref60k.antecedents import base_noun_phrases
from knowref60k.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.connectives import ConnectiveFinder
from knowref60k.nlp import Pipeline

# Whoosh's default stop list (whoosh.analysis.STOP_WORDS): removed words do not count as positions.
STOP_WORDS = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or tbd that the this to us we "
    "when will with yet you your".split()
)
SLOP = 10
_TOKEN = re.compile(r"\w+(?:\.?\w+)*")
AUXILIARIES = frozenset(
    "be am is are was were been being have has had do does did will would shall should".split()
)
NEGATIONS = frozenset({"not", "n't", "never"})
PREDICATE_TAGS = ("VB", "JJ", "RP", "MD", "NN")


def analyse(text: str) -> list[str]:
    """Lower-cased word tokens without stop words (Whoosh's StandardAnalyzer)."""
    return [token for token in (t.lower() for t in _TOKEN.findall(text)) if token not in STOP_WORDS]


@dataclass(frozen=True)
class ParsedItem:
    e1: str
    e2: str
    pred_c: str
    connective: str
    pronoun: str
    pred_q: str

    def phrase(self) -> list[str]:
        return analyse(f"{self.pred_c} {self.pred_q}")

    def content_words(self) -> list[str]:
        return analyse(f"{self.e1} {self.e2} {self.connective} {self.pronoun}")


def _predicate(doc: Doc, start: int, end: int, limit: int) -> str:
    """The predicate's core: verbs, adjectives, particles and negation, without auxiliaries and adverbs
    (a modal or auxiliary stays when a negation follows it: "couldn't")."""
    kept: list[str] = []
    for i in range(start, end):
        token = doc[i]
        negated = i + 1 < end and doc[i + 1].lower_ in NEGATIONS
        if _keeps(token.lower_, token.tag_, negated):
            kept.append(token.text_with_ws)
        if len(kept) >= limit:
            break
    return "".join(kept).replace(" n't", "n't").strip()


def _keeps(word: str, tag: str, negated: bool) -> bool:
    if word in NEGATIONS or (tag.startswith(("MD", "VB")) and negated):
        return True
    return tag.startswith(PREDICATE_TAGS) and tag != "MD" and word not in AUXILIARIES


def parse_item(doc: Doc, connectives: ConnectiveFinder) -> ParsedItem | None:
    """E1, PredC, E2, connective, pronoun, PredQ of a tagged sentence, or None when it has no such shape."""
    words = [token.lower_ for token in doc]
    found = connectives.find(words[:-1])
    after = found[0].end if found else len(words)
    pronoun = next((i for i in range(after, len(words)) if words[i] in TARGET_PRONOUNS), None)
    if pronoun is None:
        return None
    pivot = [c for c in found if c.end <= pronoun][-1]
    phrases = base_noun_phrases([t.tag_ for t in doc], pivot.start)
    if len(phrases) < 2:
        return None
    (s1, e1), (s2, e2) = phrases[0], phrases[1]
    clause_end = next((i for i in range(pronoun + 1, len(doc)) if doc[i].is_punct), len(doc))
    return ParsedItem(
        e1=doc[s1:e1].text,
        e2=doc[s2:e2].text,
        pred_c=_predicate(doc, e1, s2, 4) or _predicate(doc, e2, pivot.start, 4),
        connective=doc[pivot.start : pivot.end].text,
        pronoun=doc[pronoun].text,
        pred_q=_predicate(doc, pronoun + 1, clause_end, 3),
    )


class OverlapIndex:
    """A tantivy index of corpus sentences: analysed tokens (positions renumbered) plus the raw text."""

    def __init__(self, directory: Path) -> None:
        import tantivy

        self.tantivy = tantivy
        directory.mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("tokens", stored=False, tokenizer_name="whitespace", index_option="position")
        builder.add_text_field("text", stored=True, tokenizer_name="raw", index_option="basic")
        self.index = tantivy.Index(builder.build(), path=str(directory))

    def add(self, sentences: Iterable[str], heap_bytes: int = 200_000_000) -> int:
        writer = self.index.writer(heap_size=heap_bytes, num_threads=1)
        count = 0
        for sentence in sentences:
            tokens = analyse(sentence)
            if tokens:
                writer.add_document(self.tantivy.Document(tokens=" ".join(tokens), text=sentence))
                count += 1
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        return count

    def search(self, item: ParsedItem, limit: int = 5) -> list[tuple[float, str]]:
        """Best hits: the phrase must match (in order, within SLOP); content words only add score."""
        words = item.phrase()
        if not words:
            return []
        phrase: list[str | tuple[int, str]] = list(words)
        query_type = self.tantivy.Query
        occur = self.tantivy.Occur
        must = (
            query_type.phrase_query(self.index.schema, "tokens", phrase, slop=SLOP)
            if len(phrase) > 1
            else query_type.term_query(self.index.schema, "tokens", words[0])
        )
        clauses = [(occur.Must, must)] + [
            (occur.Should, query_type.term_query(self.index.schema, "tokens", word))
            for word in dict.fromkeys(item.content_words())
        ]
        searcher = self.index.searcher()
        hits = searcher.search(query_type.boolean_query(clauses), limit).hits
        return [(float(score), searcher.doc(address)["text"][0]) for score, address in hits]


class ItemParser:
    """Parses sentences with the project's spaCy pipeline (tagger only)."""

    def __init__(self, pipeline: Pipeline, config: ExtractConfig | None = None) -> None:
        self.pipeline = pipeline
        self.connectives = ConnectiveFinder((config or ExtractConfig()).connectives)

    def parse(self, sentences: Sequence[str]) -> list[ParsedItem | None]:
        docs = self.pipeline.tag(self.pipeline.nlp.make_doc(s) for s in sentences)
        return [parse_item(doc, self.connectives) for doc in docs]


def corpus_sentences(path: Path, pipeline: Pipeline, input_format: str = "auto") -> Iterator[str]:
    """Every sentence of a corpus file (Reddit dump, JSONL or text), cleaned and split like extraction."""
    from knowref60k.cleaning import clean_text
    from knowref60k.readers import detect_format, iter_line_chunks, open_input, parse_chunk
    from knowref60k.stats import StageStats

    fmt = detect_format(path, input_format)
    with open_input(path) as (_raw, stream):
        for chunk in iter_line_chunks(stream, path.name):
            comments, _ = parse_chunk(chunk, fmt, StageStats())
            for comment in comments:
                for paragraph in clean_text(comment.body):
                    yield from (span.text for span in pipeline.split(paragraph).sents)


def index_corpus(
    paths: Sequence[Path], directory: Path, pipeline: Pipeline, batch: int = 100_000
) -> dict[str, int]:
    """Index the sentences of every corpus file. Progress is recorded after every committed batch, so
    an interrupted run resumes where it stopped and a finished file is skipped."""
    from knowref60k.output import source_identity, write_json_atomic

    index = OverlapIndex(directory)
    progress_path = directory / "indexed.json"
    progress: dict[str, Any] = orjson.loads(progress_path.read_bytes()) if progress_path.exists() else {}
    counts: dict[str, int] = {}
    for path in paths:
        identity = {"name": path.name, **source_identity(path)}
        state = progress.get(str(path.resolve()))
        if not state or state["identity"] != identity:
            state = {"identity": identity, "sentences": 0, "complete": False}
        if state["complete"]:
            continue
        sentences = itertools.islice(corpus_sentences(path, pipeline), state["sentences"], None)
        counts[path.name] = 0
        while chunk := list(itertools.islice(sentences, batch)):
            counts[path.name] += index.add(chunk)
            state["sentences"] += len(chunk)
            progress[str(path.resolve())] = state
            write_json_atomic(progress_path, progress)
        state["complete"] = True
        progress[str(path.resolve())] = state
        write_json_atomic(progress_path, progress)
    return counts


CUTOFFS = (0.0, 25.0, 35.0)


def score_sentences(
    sentences: Sequence[str], index: OverlapIndex, parser: ItemParser, batch: int = 256
) -> list[tuple[float, str | None]]:
    """Each sentence's overlap score (its best hit's BM25, 0 when nothing passes the phrase) and hit."""
    results: list[tuple[float, str | None]] = []
    for start in range(0, len(sentences), batch):
        for item in parser.parse(sentences[start : start + batch]):
            hits = index.search(item, 1) if item is not None else []
            results.append(hits[0] if hits else (0.0, None))
    return results


def overlap_report(scores: Sequence[float]) -> dict[str, float]:
    """The paper's report: the share of items scoring above 0, 25 and 35."""
    total = len(scores) or 1
    return {
        f"share_above_{cutoff:g}": round(sum(s > cutoff for s in scores) / total, 4) for cutoff in CUTOFFS
    }
