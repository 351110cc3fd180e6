"""Gender perturbation: replace both antecedents by first names of the pronoun's gender, by offsets."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowref60k.core.names import NamePool

_CAPITALISED_WORD = re.compile(r"\b[A-Z][\w'-]*")
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an) $", re.IGNORECASE)
MAX_DRAWS = 1000


@dataclass(frozen=True)
class Perturbation:
    """The perturbed sentence, where each name and the pronoun now stand, and the seed that drew them."""

    sentence: str
    name1: str
    name1_start: int
    name1_end: int
    name2: str
    name2_start: int
    name2_end: int
    pronoun_start: int
    pronoun_end: int
    seed: int

    def columns(self) -> dict[str, Any]:
        return {
            "perturbed_sentence": self.sentence,
            "name1": self.name1,
            "name1_start": self.name1_start,
            "name1_end": self.name1_end,
            "name2": self.name2,
            "name2_start": self.name2_start,
            "name2_end": self.name2_end,
            "perturbed_pronoun_start": self.pronoun_start,
            "perturbed_pronoun_end": self.pronoun_end,
            "perturbation_seed": self.seed,
        }


def item_seed(global_seed: int, candidate_id: str) -> int:
    """A 63-bit seed from the global seed and the item id: the same on every machine and Python."""
    digest = hashlib.sha256(f"{global_seed}\x1f{candidate_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _ticket(seed: int, draw: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}\x1f{draw}".encode()).digest()[:8], "big")


def draw_names(pool: NamePool, seed: int, forbidden: frozenset[str]) -> tuple[str, str]:
    """Two distinct names, frequency-weighted, none of them (case-insensitively) in `forbidden`."""
    chosen: list[str] = []
    for draw in range(MAX_DRAWS):
        name = pool.at(_ticket(seed, draw))
        if name.lower() not in forbidden and name not in chosen:
            chosen.append(name)
            if len(chosen) == 2:
                return chosen[0], chosen[1]
    raise ValueError(f"no two distinct {pool.gender} names outside {sorted(forbidden)} in {MAX_DRAWS} draws")


def forbidden_names(row: Mapping[str, Any]) -> frozenset[str]:
    """Every capitalised word of the sentence and every word of both antecedents, lower-cased."""
    words = {match.group().lower() for match in _CAPITALISED_WORD.finditer(row["sentence"])}
    for field in ("antecedent1", "antecedent2"):
        words.update(word.lower() for word in re.findall(r"[\w'-]+", row[field]))
    return frozenset(words)


def _replacement(sentence: str, start: int, end: int, name: str) -> tuple[int, int, str]:
    """(region start, region end, new text): the new text starts with the name.

    A directly preceding article goes ("the Prince" -> "Paul"), and a bare possessive apostrophe
    gets its "s" when the new name needs one ("James' car" -> "Paul's car").
    """
    article = _ARTICLE_BEFORE.search(sentence, 0, start)
    if article is not None and article.end() == start:
        start = article.start()
    text = name
    if sentence[end : end + 1] == "'" and sentence[end + 1 : end + 2] != "s" and not name.endswith("s"):
        end += 1
        text = f"{name}'s"
    return start, end, text


def perturb(row: Mapping[str, Any], pools: Mapping[str, NamePool], global_seed: int) -> Perturbation:
    """Replace antecedent1 and antecedent2 (in this order in the text) by two new names, by offsets."""
    seed = item_seed(global_seed, row["candidate_id"])
    first, second = draw_names(pools[row["pronoun_gender"]], seed, forbidden_names(row))
    sentence = row["sentence"]
    pieces: list[str] = []
    cursor = 0
    spans: list[tuple[int, int]] = []
    length = 0
    for name, field in ((first, "antecedent1"), (second, "antecedent2")):
        start, end, text = _replacement(sentence, row[f"{field}_start"], row[f"{field}_end"], name)
        pieces.append(sentence[cursor:start])
        length += start - cursor
        spans.append((length, length + len(name)))
        pieces.append(text)
        length += len(text)
        cursor = end
    shift = length - cursor
    pieces.append(sentence[cursor:])
    return Perturbation(
        sentence="".join(pieces),
        name1=first,
        name1_start=spans[0][0],
        name1_end=spans[0][1],
        name2=second,
        name2_start=spans[1][0],
        name2_end=spans[1][1],
        pronoun_start=row["pronoun_start"] + shift,
        pronoun_end=row["pronoun_end"] + shift,
        seed=seed,
    )
