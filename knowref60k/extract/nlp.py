"""Find, load and run the spaCy pipeline, independent of which English model it is."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
import spacy
from spacy.attrs import ORTH
from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc
from threadpoolctl import threadpool_limits

from knowref60k.core.config import DEFAULT_MODELS, MODEL_ENV_VAR, is_installed
from knowref60k.core.errors import UserError
from knowref60k.core.io import read_tsv_rows
from knowref60k.core.paths import DATA_DIR
from knowref60k.extract.remembered import ENTITIES, TAGGING, RememberedAnalyses
from knowref60k.extract.spacy_arithmetic import stabilise

log = logging.getLogger(__name__)

MODEL_HELP = (
    "Install one with `make setup` (it installs ../shared/models/en_ud_open_sm-*.whl when that folder "
    "exists), "
    "or `pip install <model wheel>`, or choose an installed one with --model or "
    f"{MODEL_ENV_VAR}=<name or path>."
)
# What each step of extraction needs; everything else (parser, lemmatizer, ...) is never run.
TAGGING_COMPONENTS = ("tok2vec", "tagger")
NER_COMPONENTS = ("ner",)
FREQUENT_WORDS = DATA_DIR / "tokenizer" / "frequent_words.tsv"


def model_version(name: str) -> str:
    """The installed pipeline's version, read without loading it."""
    if Path(name).is_dir():
        meta = Path(name) / "meta.json"
        return str(orjson.loads(meta.read_bytes()).get("version", "unknown")) if meta.exists() else "unknown"
    return str(spacy.util.get_package_version(name) or "unknown")


def pronoun_forms(nlp: Language, pronouns: Iterable[str]) -> set[str]:
    """The words whose tokens can include one of `pronouns`: the pronouns themselves, and the forms
    without an apostrophe that the tokenizer's exceptions split ("hes" -> "he" "s"), so that a text
    without any of these words can never yield the pronoun.
    """
    wanted = {p.lower() for p in pronouns}
    forms = set(wanted)
    rules: dict[str, list[dict[int, str]]] = getattr(nlp.tokenizer, "rules", {})
    for surface, pieces in rules.items():
        if any(str(piece.get(ORTH, "")).lower() in wanted for piece in pieces):
            forms.add(surface.lower())
    return forms


class CaselessPattern:
    """A pattern matched case-insensitively, as if compiled with IGNORECASE, but faster on ASCII text
    (nearly every Reddit paragraph): that is searched case-sensitively in its
    lower-cased copy. Lower-casing ASCII moves no character and changes only A-Z, so with a pattern whose
    letters are all lower-case the matches start and end where IGNORECASE's do (their text is lower-cased).
    Other text is searched with the IGNORECASE pattern."""

    def __init__(self, source: str, lowered_source: str | None = None) -> None:
        """`lowered_source`: a faster pattern with the same matches on lower-cased ASCII text."""
        for pattern in (source, lowered_source or ""):
            if any(character.isupper() for character in re.sub(r"\\.", "", pattern)):
                raise ValueError(f"pattern with capital letters: {pattern!r}")
        self.exact = re.compile(source, re.IGNORECASE)
        self.lowered_ascii = re.compile(lowered_source or source)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        if text.isascii():
            return self.lowered_ascii.search(text.lower(), pos)
        return self.exact.search(text, pos)

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        if text.isascii():
            return self.lowered_ascii.finditer(text.lower(), pos)
        return self.exact.finditer(text, pos)


class WordFinder(CaselessPattern):
    """Finds whole words of a set case-insensitively: the matches of `\\b(?:words)\\b` under IGNORECASE.

    That pattern costs a few microseconds per paragraph, because the engine tries the word boundary and
    the words at every position. On ASCII text this finder searches the lower-cased text with the same
    words grouped by first letter, the boundary checked after that letter (`h(?<!\\wh)...`): the engine
    then skips in C to the next candidate letter, about 2.5 times faster.
    """

    def __init__(self, words: Iterable[str]) -> None:
        words = {word.lower() for word in words}
        by_first: dict[str, set[str]] = {}
        for word in words:
            by_first.setdefault(word[0], set()).add(word[1:])
        alternatives = (
            rf"{re.escape(first)}(?<!\w{re.escape(first)}){trie_pattern(rests)}"
            for first, rests in sorted(by_first.items())
        )
        super().__init__(rf"\b{trie_pattern(words)}\b", rf"(?:{'|'.join(alternatives)})\b")


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching exactly `words`, as a trie ("h(?:e(?:r(?:s)?)?|i(?:m|s))"): the same language as
    the plain alternation, but a failed match is given up after one character instead of trying every
    word, which makes the pronoun search over every paragraph about five times faster."""
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = root
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}
    return _trie_regex(root)


def _trie_regex(node: dict[str, dict]) -> str:  # type: ignore[type-arg]
    ends_here = "" in node
    branches = [
        re.escape(character) + _trie_regex(child) for character, child in sorted(node.items()) if character
    ]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 and not ends_here else f"(?:{'|'.join(branches)})"
    return f"(?:{body})?" if ends_here else body


def resolve_model_name(requested: str | None) -> str:
    """The requested model, else the first installed default (en_core_web_sm, then en_ud_open_sm)."""
    if requested:
        if not is_installed(requested):
            raise UserError(f"spaCy pipeline {requested!r} is not installed. {MODEL_HELP}")
        return requested
    for name in DEFAULT_MODELS:
        if is_installed(name):
            return name
    raise UserError(f"no spaCy pipeline found (tried {', '.join(DEFAULT_MODELS)}). {MODEL_HELP}")


class Pipeline:
    """A loaded spaCy pipeline split into the pieces extraction runs separately: split, tag, NER."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        try:
            self.nlp: Language = spacy.load(model_name)
        except OSError as error:
            raise UserError(f"cannot load spaCy pipeline {model_name!r}: {error}. {MODEL_HELP}") from None
        missing = [
            name for name in (*TAGGING_COMPONENTS[1:], *NER_COMPONENTS) if name not in self.nlp.pipe_names
        ]
        if missing:
            raise UserError(f"spaCy pipeline {model_name!r} lacks component(s) {', '.join(missing)}")
        stabilise(self.nlp)
        # One BLAS thread: the pipeline's products now run on OpenBLAS (not BLIS, single-threaded), and
        # extraction runs a process per core, whose OpenBLAS threads would spin on each other's cores.
        threadpool_limits(limits=1, user_api="blas")
        self.version = str(self.nlp.meta.get("version", "unknown"))
        self.sentencizer = Sentencizer()
        self._taggers = [(n, p) for n, p in self.nlp.pipeline if n in TAGGING_COMPONENTS]
        self._ner = [(n, p) for n, p in self.nlp.pipeline if n in NER_COMPONENTS]
        if isinstance(self.nlp.tokenizer, Tokenizer):  # a custom tokenizer has no cache to warm
            warm_tokenizer(self.nlp.tokenizer, frequent_words())
        self.remembered: RememberedAnalyses | None = None
        log.info("loaded spaCy pipeline %s %s", model_name, self.version)

    def chunk_zone(self) -> AbstractContextManager[Any]:
        """A memory zone that frees the strings one chunk of input adds to the vocabulary (they would
        otherwise grow with the input)."""
        return self.nlp.memory_zone()

    def split(self, paragraph: str) -> Doc:
        """Tokenise and mark sentence starts with rules: the parser's boundaries are weak on comments."""
        doc: Doc = self.sentencizer(self.nlp.make_doc(paragraph))
        return doc

    @contextmanager
    def remembering(self) -> Iterator[RememberedAnalyses]:
        """Within it, a doc whose tokens were tagged (or whose entities were found) before gets what was
        found then (remembered.py): for a process that extracts the same sentences under several
        settings. Forgotten on the way out."""
        if self.remembered is not None:
            yield self.remembered
            return
        self.remembered = RememberedAnalyses()
        try:
            yield self.remembered
        finally:
            log.info("%d analyses of sentences analysed before recalled", self.remembered.recalled)
            self.remembered = None

    def tag(self, docs: Iterable[Doc], batch_size: int = 256) -> Iterator[Doc]:
        return self._analysed(TAGGING, self._taggers, docs, batch_size)

    def recognise_entities(self, docs: Iterable[Doc], batch_size: int = 256) -> None:
        """Label the entities of every doc (in place: `doc.ents`, `token.ent_type_`)."""
        for _doc in self._analysed(ENTITIES, self._ner, docs, batch_size):
            pass  # the components write into each doc; running the stream is the work

    def _analysed(
        self, kind: str, components: Sequence[tuple[str, Any]], docs: Iterable[Doc], batch_size: int
    ) -> Iterator[Doc]:
        """`docs` through `components`, or, while remembering, only those not analysed so before."""
        if self.remembered is None:
            return _run(components, docs, batch_size)
        return self.remembered.analysed(kind, docs, lambda fresh: _run(components, fresh, batch_size))


@lru_cache(maxsize=2)
def shared_pipeline(model_name: str) -> Pipeline:
    """One loaded pipeline per process and model. Loading takes about 3 s (most of it warming the
    tokenizer), and the evaluation and the build scripts extract under a dozen settings in one process;
    what a pipeline keeps between texts (the tokenizer's cache of splits, strings freed after each chunk)
    changes no result, as a worker's many chunks already show."""
    return Pipeline(model_name)


@lru_cache(maxsize=1)
def frequent_words(path: Path = FREQUENT_WORDS) -> tuple[str, ...]:
    """The words, as written between spaces, most frequent in Reddit paragraphs (data/tokenizer); none,
    with a warning, when the file is missing from a data folder set by KNOWREF60K_DATA_DIR: the
    warm-up only saves time."""
    if not path.is_file():
        log.warning(
            "%s is missing: the tokenizer is not warmed up (extraction is slower, not different)", path
        )
        return ()
    return tuple(row["word"] for row in read_tsv_rows(path))


def warm_tokenizer(tokenizer: Tokenizer, words: Sequence[str]) -> None:
    """Fill the tokenizer's cache with `words`, outside any memory zone.

    Inside a memory zone, where every chunk of input is processed, spaCy adds nothing to the cache, so a
    word missing from it is split by the prefix, suffix and infix rules at each occurrence, which made
    the tokenizer 3.5 times slower (docs/decisions.md, "Tokenizer warm-up"). The cache changes no token:
    it only stores how a word was split. Its size limit is raised so that every word fits.
    """
    tokenizer.max_cache_size = max(tokenizer.max_cache_size, len(words))
    for word in words:
        tokenizer(word)


def _run(components: Sequence[tuple[str, Any]], docs: Iterable[Doc], batch_size: int) -> Iterator[Doc]:
    stream: Iterable[Doc] = docs
    for _name, component in components:
        stream = component.pipe(stream, batch_size=batch_size)
    return iter(stream)
