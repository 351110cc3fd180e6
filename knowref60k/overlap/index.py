"""Overlap audit (KnowRef-60K paper, section 3): how close does an item come to a sentence of a
pretraining corpus? Query = the two predicates' words, in order, within 10 positions, AND any of
the content words (the two antecedents, the connective, the pronoun), scored with BM25.

The paper used Whoosh (lower-casing word tokenizer, a short stop list that renumbers positions);
this module indexes the same analysed tokens with tantivy, whose BM25 uses k1 = 1.2 and b = 0.75.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spacy.tokens import Doc

from knowref60k.core.config import TARGET_PRONOUNS, ExtractConfig
from knowref60k.core.errors import UserError
from knowref60k.core.records import Span
from knowref60k.extract.nlp import Pipeline
from knowref60k.extract.records import TokenRange
from knowref60k.extract.stages.antecedents import base_noun_phrases
from knowref60k.extract.stages.connectives import ConnectiveFinder

# Whoosh's default stop list (whoosh.analysis.STOP_WORDS): removed words do not count as positions.
STOP_WORDS = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or tbd that the this to us we "
    "when will with yet you your".split()
)
SLOP = 10
BLANK = "_"
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
            kept.append(token.text)
        if len(kept) >= limit:
            break
    return " ".join(kept).replace(" n't", "n't")


def _keeps(word: str, tag: str, negated: bool) -> bool:
    if word in NEGATIONS or (tag.startswith(("MD", "VB")) and negated):
        return True
    # A proper noun names an entity: it is content, not part of what is predicated.
    return tag.startswith(PREDICATE_TAGS) and not tag.startswith(("MD", "NNP")) and word not in AUXILIARIES


def parse_item(doc: Doc, connectives: ConnectiveFinder) -> ParsedItem | None:
    """Parse a free sentence: the first he/she/him/her/his/hers after a connective is the pronoun, and
    the first two base noun phrases before the connective are the antecedents."""
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
    return _parsed(doc, phrases[0], phrases[1], pivot, pronoun)


@dataclass(frozen=True)
class MarkedItem:
    """An item whose pronoun (or blank, "_") and antecedents are known as character spans of its
    sentence; an antecedent the sentence does not spell out literally is None."""

    sentence: str
    pronoun: Span
    antecedents: tuple[Span | None, Span | None]


def parse_marked(doc: Doc, item: MarkedItem, connectives: ConnectiveFinder) -> ParsedItem | None:
    """Parse an item with known spans; missing antecedents are filled with the sentence's noun phrases."""
    pronoun_span = doc.char_span(item.pronoun.start, item.pronoun.end, alignment_mode="expand")
    if pronoun_span is None:
        return None
    pronoun = pronoun_span.start
    before = [c for c in connectives.find([t.lower_ for t in doc][:-1]) if c.end <= pronoun]
    pivot = before[-1] if before else None
    phrases = base_noun_phrases([t.tag_ for t in doc], pivot.start if pivot else pronoun)
    spans = [
        _noun_phrase_around(doc, span, phrases)
        for span in item.antecedents
        if span is not None and span.end <= item.pronoun.start
    ]
    spans += [p for p in phrases if not any(_overlaps(p, s) for s in spans)][: 2 - len(spans)]
    if len(spans) < 2:
        return None
    first, second = sorted(spans[:2])
    return _parsed(doc, first, second, pivot, pronoun)


def _noun_phrase_around(doc: Doc, span: Span, phrases: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The tokens of a character span, widened leftwards to the base noun phrase it ends ("suitcase" ->
    "the brown suitcase"); never rightwards, where a mistagged verb would join ("the sniper shot")."""
    tokens = doc.char_span(span.start, span.end, alignment_mode="expand")
    start, end = (tokens.start, tokens.end) if tokens is not None else (0, 0)
    for phrase in phrases:
        if _overlaps(phrase, (start, end)):
            start = min(start, phrase[0])
    return start, end


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _parsed(
    doc: Doc, first: tuple[int, int], second: tuple[int, int], pivot: TokenRange | None, pronoun: int
) -> ParsedItem:
    (s1, e1), (s2, e2) = first, second
    clause_end = next((i for i in range(pronoun + 1, len(doc)) if doc[i].is_punct), len(doc))
    return ParsedItem(
        e1=doc[s1:e1].text,
        e2=doc[s2:e2].text,
        pred_c=_context_predicate(doc, first, second, pivot.start if pivot else pronoun),
        connective=doc[pivot.start : pivot.end].text if pivot else "",
        pronoun="" if doc[pronoun].text == BLANK else doc[pronoun].text,
        pred_q=_predicate(doc, pronoun + 1, clause_end, 3),
    )


def _context_predicate(doc: Doc, first: tuple[int, int], second: tuple[int, int], boundary: int) -> str:
    """PredC: between the antecedents ("couldn't lift"), else between the second and the connective,
    else before the first ("I poured water from the bottle into the cup")."""
    return (
        _predicate(doc, first[1], second[0], 4)
        or _predicate(doc, second[1], boundary, 4)
        or _predicate(doc, 0, first[0], 4)
    )


class OverlapIndex:
    """A tantivy index of corpus sentences: analysed tokens (positions renumbered as Whoosh does), the
    raw text (stored only), and the source file and batch that added them (for replacing them)."""

    def __init__(self, directory: Path, create: bool = False) -> None:
        import tantivy

        self.tantivy = tantivy
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not (directory.is_dir() and tantivy.Index.exists(str(directory))):
            raise UserError(
                f"{directory}: no overlap index there (build one with `knowref60k overlap index`)"
            )
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("tokens", stored=False, tokenizer_name="whitespace", index_option="position")
        builder.add_bytes_field("text", stored=True, indexed=False)
        builder.add_text_field("source", stored=False, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("batch", stored=False, tokenizer_name="raw", index_option="basic")
        try:
            self.index = tantivy.Index(builder.build(), path=str(directory))
        except ValueError as error:
            raise UserError(
                f"{directory}: an index of another layout is there ({error}); index into a new folder"
            ) from None

    def add(self, sentences: Iterable[str], source: str = "", batch: str = "") -> int:
        """Add sentences (those with no word left after analysis are skipped) as one commit; documents
        of an earlier attempt at the same batch are deleted in that commit."""
        writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        if batch:
            writer.delete_documents_by_term("batch", batch)
        count = 0
        for sentence in sentences:
            tokens = analyse(sentence)
            if tokens:
                document = self.tantivy.Document(
                    tokens=" ".join(tokens), text=sentence.encode(), source=source, batch=batch
                )
                writer.add_document(document)
                count += 1
        self._commit(writer)
        return count

    def remove_source(self, source: str) -> None:
        writer = self.index.writer(heap_size=50_000_000, num_threads=1)
        writer.delete_documents_by_term("source", source)
        self._commit(writer)

    def _commit(self, writer: Any) -> None:
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def __len__(self) -> int:
        return int(self.index.searcher().num_docs)

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
        return [(float(score), searcher.doc(address)["text"][0].decode()) for score, address in hits]


class ItemParser:
    """Parses free sentences and marked items with the project's spaCy pipeline (tagger only)."""

    def __init__(self, pipeline: Pipeline, config: ExtractConfig | None = None) -> None:
        self.pipeline = pipeline
        self.connectives = ConnectiveFinder((config or ExtractConfig()).connectives)

    def parse(self, items: Sequence[str | MarkedItem]) -> list[ParsedItem | None]:
        texts = [item if isinstance(item, str) else item.sentence for item in items]
        docs = self.pipeline.tag(self.pipeline.nlp.make_doc(text) for text in texts)
        return [
            parse_item(doc, self.connectives)
            if isinstance(item, str)
            else parse_marked(doc, item, self.connectives)
            for item, doc in zip(items, docs, strict=True)
        ]


CUTOFFS = (0.0, 25.0, 35.0)
CURVE_CUTOFFS = range(0, 51)


@dataclass(frozen=True)
class Overlap:
    """An item's overlap: its best hit's BM25 score (0 when nothing passes the phrase), that hit, and
    the query's parts (None when the item has no parsable shape)."""

    score: float
    hit: str | None
    query: ParsedItem | None


def score_items(
    items: Sequence[str | MarkedItem], index: OverlapIndex, parser: ItemParser, batch: int = 256
) -> Iterator[Overlap]:
    """Every item's overlap, in order."""
    for start in range(0, len(items), batch):
        for query in parser.parse(items[start : start + batch]):
            hits = index.search(query, 1) if query is not None else []
            score, hit = hits[0] if hits else (0.0, None)
            yield Overlap(round(score, 4), hit, query)


def overlap_curve(scores: Sequence[float], cutoffs: Iterable[float] = CURVE_CUTOFFS) -> list[float]:
    """The share of items scoring above each cut-off (the paper's overlap figure)."""
    total = len(scores) or 1
    return [round(sum(s > cutoff for s in scores) / total, 4) for cutoff in cutoffs]


def overlap_report(scores: Sequence[float]) -> dict[str, float]:
    """The paper's report: the share of items scoring above 0, 25 and 35."""
    return {
        f"share_above_{c:g}": share for c, share in zip(CUTOFFS, overlap_curve(scores, CUTOFFS), strict=True)
    }
