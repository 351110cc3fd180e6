"""Gender perturbation: replace both antecedents by first names of the pronoun's gender, by offsets."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowref60k.core.names import NamePool
from knowref60k.prepare.name_mentions import name_mentions

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


def _article_start(sentence: str, start: int) -> int | None:
    """Where an article directly before `start` begins, if there is one."""
    article = _ARTICLE_BEFORE.search(sentence, 0, start)
    return article.start() if article is not None and article.end() == start else None


def _replacement(sentence: str, start: int, end: int, name: str, drop_article: bool) -> tuple[int, int, str]:
    """(region start, region end, new text): the new text starts with the name.

    A directly preceding article goes when `drop_article` ("the Prince" -> "Paul"), and a bare possessive
    apostrophe gets its "s" when the new name needs one ("James' car" -> "Paul's car").
    """
    article = _article_start(sentence, start) if drop_article else None
    if article is not None:
        start = article
    text = name
    if sentence[end : end + 1] == "'" and sentence[end + 1 : end + 2] != "s" and not name.endswith("s"):
        end += 1
        text = f"{name}'s"
    return start, end, text


def _replaced(row: Mapping[str, Any]) -> list[tuple[int, int, int, bool]]:
    """(start, end, antecedent, whether an article directly before it goes) of both antecedents and every
    other mention of them, in order. A mention takes an article away with it only where its antecedent
    did ("the Doctor" ... "the Doctor"), not in "the Trump administration"."""
    articles = [_article_start(row["sentence"], row[f"antecedent{i}_start"]) is not None for i in (1, 2)]
    spans = [(row[f"antecedent{i + 1}_start"], row[f"antecedent{i + 1}_end"], i, True) for i in (0, 1)]
    spans += [(m.start, m.end, m.which, articles[m.which]) for m in name_mentions(row).mentions]
    return sorted(spans)


def perturb(row: Mapping[str, Any], pools: Mapping[str, NamePool], global_seed: int) -> Perturbation:
    """Replace antecedent1 and antecedent2, and the other mentions of their names, by two new names, by
    offsets. Items whose other mentions are ambiguous (`name_mentions`) are dropped before this, by the
    `name_mention` stage."""
    seed = item_seed(global_seed, row["candidate_id"])
    names = draw_names(pools[row["pronoun_gender"]], seed, forbidden_names(row))
    sentence = row["sentence"]
    antecedent_starts = (row["antecedent1_start"], row["antecedent2_start"])
    pieces: list[str] = []
    cursor = 0
    length = 0
    spans: dict[int, tuple[int, int]] = {}
    shift = 0
    for span_start, span_end, which, drop_article in _replaced(row):
        start, end, text = _replacement(sentence, span_start, span_end, names[which], drop_article)
        pieces.append(sentence[cursor:start])
        length += start - cursor
        if span_start == antecedent_starts[which]:
            spans[which] = (length, length + len(names[which]))
        pieces.append(text)
        length += len(text)
        cursor = end
        if end <= row["pronoun_start"]:
            shift = length - cursor
    pieces.append(sentence[cursor:])
    return Perturbation(
        sentence="".join(pieces),
        name1=names[0],
        name1_start=spans[0][0],
        name1_end=spans[0][1],
        name2=names[1],
        name2_start=spans[1][0],
        name2_end=spans[1][1],
        pronoun_start=row["pronoun_start"] + shift,
        pronoun_end=row["pronoun_end"] + shift,
        seed=seed,
    )
