"""Name lists (1990 US Census, SSA baby names, world given names) and Reddit word case counts, used to
recognise person names and their likely gender."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from knowref60k.core.io import read_tsv_rows
from knowref60k.core.paths import DATA_DIR

NAMES_DIR = DATA_DIR / "names"
GENDERS = ("male", "female")


@lru_cache(maxsize=4)
def load_first_names(gender: str, names_dir: Path = NAMES_DIR) -> dict[str, float]:
    """Census first names of one gender (title case) -> frequency in percent."""
    return {
        row["name"]: float(row["frequency_percent"]) for row in read_tsv_rows(names_dir / f"{gender}.tsv")
    }


@lru_cache(maxsize=4)
def census_first_names(names_dir: Path = NAMES_DIR) -> frozenset[str]:
    return frozenset(name for gender in GENDERS for name in load_first_names(gender, names_dir))


@lru_cache(maxsize=4)
def known_first_names(ssa_min_count: int, names_dir: Path = NAMES_DIR) -> frozenset[str]:
    """Census first names, plus SSA baby names given to at least `ssa_min_count` babies."""
    census = census_first_names(names_dir)
    ssa = {name for name, babies in ssa_name_counts(names_dir).items() if babies >= ssa_min_count}
    return frozenset(census | ssa)


@lru_cache(maxsize=4)
def popular_first_names(min_percent: float, names_dir: Path = NAMES_DIR) -> frozenset[str]:
    """Census first names borne by at least `min_percent` percent of people of either gender."""
    return frozenset(
        name
        for gender in GENDERS
        for name, percent in load_first_names(gender, names_dir).items()
        if percent >= min_percent
    )


@lru_cache(maxsize=4)
def ssa_name_counts(names_dir: Path = NAMES_DIR) -> dict[str, int]:
    """First name -> babies given it (SSA, 1880-2012, both sexes)."""
    return {name: male + female for name, (male, female) in ssa_counts_by_sex(names_dir).items()}


@lru_cache(maxsize=4)
def ssa_counts_by_sex(names_dir: Path = NAMES_DIR) -> dict[str, tuple[int, int]]:
    """First name -> (boys, girls) given it (SSA, 1880-2012)."""
    return {
        row["name"]: (int(row["count_male"]), int(row["count_female"]))
        for row in read_tsv_rows(names_dir / "ssa_first_names.tsv")
    }


@lru_cache(maxsize=4)
def world_first_names(names_dir: Path = NAMES_DIR) -> dict[str, float]:
    """Given names of many countries (title case) -> share of women among the people who bear them."""
    return {
        row["name"]: float(row["female_share"]) for row in read_tsv_rows(names_dir / "world_first_names.tsv")
    }


@lru_cache(maxsize=4)
def female_shares(names_dir: Path = NAMES_DIR) -> dict[str, float]:
    """Share of women among the bearers of each first name: SSA counts where the SSA has the name, else
    the world lists' consensus."""
    shares = dict(world_first_names(names_dir))
    for name, (male, female) in ssa_counts_by_sex(names_dir).items():
        shares[name] = female / (male + female)
    return shares


@lru_cache(maxsize=4)
def reddit_common_words(names_dir: Path = NAMES_DIR) -> frozenset[str]:
    """Words written in lower case most of the time inside Reddit sentences ("will", "general")."""
    return frozenset(row["word"] for row in read_tsv_rows(names_dir / "common_words.tsv"))


@lru_cache(maxsize=4)
def entity_priors(names_dir: Path = NAMES_DIR) -> dict[str, tuple[int, int]]:
    """Capitalised word -> (contexts where the model called it a person, contexts where it called it
    another kind of entity), counted over Reddit comments (`build_person_priors.py`)."""
    return {
        row["word"]: (int(row["person"]), int(row["other_entity"]))
        for row in read_tsv_rows(names_dir / "person_priors.tsv")
    }


@dataclass(frozen=True)
class NameLexicon:
    """What person detection knows about words: first names, their genders, common words, entity priors."""

    first_names: frozenset[str]
    popular_first_names: frozenset[str]
    common_words: frozenset[str]
    world_names: frozenset[str] = frozenset()
    female_share: dict[str, float] = field(default_factory=dict)
    entity_priors: dict[str, tuple[int, int]] = field(default_factory=dict)

    def is_first_name(self, text: str) -> bool:
        return text.capitalize() in self.first_names

    def is_popular_first_name(self, text: str) -> bool:
        return text.capitalize() in self.popular_first_names

    def is_common_word(self, text: str) -> bool:
        """Whether the word is mostly an ordinary word ("Man", "Will", "General"), not mostly a name."""
        return text.lower() in self.common_words

    def is_world_name(self, text: str) -> bool:
        return text.capitalize() in self.world_names

    def mostly_other_entity(self, text: str, evidence: int, ratio: float) -> bool:
        """Whether the model, over many Reddit contexts, called the word a place, organisation or other
        non-person entity at least `ratio` times as often as a person ("Houston", "Marvel")."""
        person, other = self.entity_priors.get(text, (0, 0))
        return other >= evidence and other >= ratio * person

    def gender(self, text: str, certainty: float) -> str | None:
        """ "male" or "female" when at least `certainty` of the name's bearers are of that gender."""
        share = self.female_share.get(text.capitalize())
        if share is None:
            return None
        if share >= certainty:
            return "female"
        return "male" if share <= 1 - certainty else None


@dataclass(frozen=True)
class NamePool:
    """First names of one gender to draw from, with integer weights (frequency in 1/1000 percent), so
    draws are exact and the same on every machine."""

    gender: str
    names: tuple[str, ...]
    cumulative: tuple[int, ...]

    @property
    def total(self) -> int:
        return self.cumulative[-1]

    def at(self, ticket: int) -> str:
        """The name whose weight interval holds `ticket` (0 <= ticket < total)."""
        return self.names[bisect.bisect_right(self.cumulative, ticket % self.total)]


@lru_cache(maxsize=8)
def common_word_names(names_dir: Path = NAMES_DIR) -> frozenset[str]:
    """Census first names that are mostly ordinary words on Reddit ("Will", "May", "Hope")."""
    words = reddit_common_words(names_dir)
    return frozenset(
        name for gender in GENDERS for name in load_first_names(gender, names_dir) if name.lower() in words
    )


@lru_cache(maxsize=8)
def perturbation_pool(gender: str, ambiguity_share: float, names_dir: Path = NAMES_DIR) -> NamePool:
    """Census names of `gender`, minus names that are mostly common words and names borne by the other
    gender more than `ambiguity_share` of the time."""
    other = load_first_names("female" if gender == "male" else "male", names_dir)
    excluded = common_word_names(names_dir)
    names: list[str] = []
    cumulative: list[int] = []
    total = 0
    for name, percent in load_first_names(gender, names_dir).items():
        if name in excluded or other.get(name, 0.0) / (percent + other.get(name, 0.0)) > ambiguity_share:
            continue
        total += round(percent * 1000)
        names.append(name)
        cumulative.append(total)
    return NamePool(gender, tuple(names), tuple(cumulative))
