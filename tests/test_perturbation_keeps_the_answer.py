"""Renaming keeps the answer, on the whole resolution gold set: every valid gold sentence with a judged
referent (data/eval/reddit_referents.jsonl) goes through prepare's own stages with the shipped name pools
and the default seed, and each item kept must still have its pronoun refer to the judged person under the
new name standing at that person's place."""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from difflib import SequenceMatcher
from typing import Any

import orjson
import pytest

from knowref60k.core.config import TARGET_PRONOUNS, PrepareConfig
from knowref60k.core.names import GENDERS, perturbation_pool
from knowref60k.core.stage import chain
from knowref60k.extract.persons import TITLES
from knowref60k.prepare.dedup import DedupIndex
from knowref60k.prepare.name_mentions import name_mentions
from knowref60k.prepare.preparer import FileInputs, built_stages
from knowref60k.prepare.stages.dedup import Deduplicate
from knowref60k.quality.gold import GOLD_DIR, GOLD_FILE
from knowref60k_annotation.tasks import ORDER_SEED, resolution_task

log = logging.getLogger(__name__)

REFERENTS = GOLD_DIR / "reddit_referents.jsonl"
# A word, a possessive kept with it ("Trump's", "James'"), or one other character.
_TOKEN = re.compile(r"\w+(?:['’]s\b|['’](?!\w))?|[^\w\s]")
_POSSESSIVE = re.compile(r"['’]s?$")
# Capitalised words of a name that are not the person on their own.
_NOT_NAMES = frozenset({"the", "of", "and", "a", "an"})
# The share of the gold items the name_mention stage may drop at most: a rule that drops more hides
# items instead of renaming them.
MOST_DROPPED_FOR_MENTIONS = 0.02


def gold_rows() -> list[dict[str, Any]]:
    """The valid gold sentences with a judged referent, as candidate rows."""
    referents = {
        line["candidate_id"]: line["referent"]
        for line in map(orjson.loads, REFERENTS.read_bytes().splitlines())
    }
    rows = []
    for record in map(orjson.loads, GOLD_FILE.read_bytes().splitlines()):
        if record["label"] != "valid" or record["candidate_id"] not in referents:
            continue
        sentence = record["sentence"]
        row = {key: value for key, value in record.items() if key not in ("antecedent1", "antecedent2")}
        for index, (start, end) in enumerate((record["antecedent1"], record["antecedent2"]), start=1):
            row |= {f"antecedent{index}": sentence[start:end]}
            row |= {f"antecedent{index}_start": start, f"antecedent{index}_end": end}
        row |= {"link_id": None, "created_utc": None, "validity_score": None}
        row |= {"pronoun_gender": TARGET_PRONOUNS[record["pronoun"].lower()]}
        row |= {"referent": referents[record["candidate_id"]]}
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], list[Any], int]:
    """(items, stages, gold rows): every prepare stage but de-duplication (gold sentences may be near
    copies of each other, which says nothing about renaming), as `Preparer` runs them."""
    rows = gold_rows()
    config = PrepareConfig(validity_threshold=0.0)
    pools = {gender: perturbation_pool(gender, config.gender_ambiguity_share) for gender in GENDERS}
    index = DedupIndex(tmp_path_factory.mktemp("index") / "dedup.sqlite", config)
    inputs = FileInputs(0.0, config.seed, index, pools, "gold", Counter())
    stages = built_stages(inputs, skip=(Deduplicate,))
    items = list(chain(stages, rows))
    index.__exit__()
    return items, stages, len(rows)


def tokens(text: str) -> list[tuple[int, str]]:
    return [(match.start(), match.group()) for match in _TOKEN.finditer(text)]


def name_words(antecedent: str) -> set[str]:
    """Its capitalised words that can name the person alone (no title, no "The")."""
    return {
        word
        for word in re.findall(r"[\w'’-]+", antecedent)
        if word[0].isupper() and len(word) > 1 and word.lower() not in TITLES | _NOT_NAMES
    }


def answer_problems(item: dict[str, Any]) -> list[str]:
    """What breaks the answer's mapping, found by aligning the original and the renamed sentence word by
    word: each changed stretch must become name1 or name2 (possessive kept), and be a mention of that
    antecedent only; name1 stands where antecedent1 stood and name2 where antecedent2 stood; the pronoun
    is the same word, unchanged, at the item's offsets; no word of either original name is left."""
    original, renamed = tokens(item["sentence"]), tokens(item["perturbed_sentence"])
    places = [(item["name1_start"], item["name1_end"]), (item["name2_start"], item["name2_end"])]
    problems = [f"name{k} not at its offsets" for k in (1, 2) if _at(item, places[k - 1]) != item[f"name{k}"]]
    matcher = SequenceMatcher(None, [t for _, t in original], [t for _, t in renamed], autojunk=False)
    moved: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            moved |= {original[i][0]: renamed[j1 + i - i1][0] for i in range(i1, i2)}
        else:
            problems += _renaming_problems(item, original[i1:i2], renamed[j1:j2])
    pronoun = (item["perturbed_pronoun_start"], item["perturbed_pronoun_end"])
    if moved.get(item["pronoun_start"]) != pronoun[0] or _at(item, pronoun) != item["pronoun"]:
        problems.append("the pronoun moved or changed")
    for k in (1, 2):
        for word in name_words(item[f"antecedent{k}"]):
            if re.search(rf"(?<![\w'’-]){re.escape(word)}(?![\w-])", item["perturbed_sentence"]):
                problems.append(f"{word!r} of antecedent{k} left")
    return problems


def _renaming_problems(
    item: dict[str, Any], old: list[tuple[int, str]], new: list[tuple[int, str]]
) -> list[str]:
    """A changed stretch must split, in order, into one group of old words per new name ("Ohma's Niko"
    -> "William's Bobby"): words of the antecedent whose name it is, and of no other, with articles and
    titles; the new name at that antecedent's offsets when the group holds the antecedent itself. One
    name becomes one new name ("Julio Cesar's" not "Robert Robert's")."""
    groups = _groups(item, old, [_POSSESSIVE.sub("", text) for _, text in new])
    if groups is None:
        return [f"{[t for _, t in old]} became {[t for _, t in new]}"]
    problems = []
    for (before, first), (after, second) in itertools.pairwise(groups):
        if before == after and [t for _, t in first] != [t for _, t in second]:
            problems.append(f"one name became two: {[t for _, t in old]} -> {[t for _, t in new]}")
    for (which, group), (place, _) in zip(groups, new, strict=True):
        start = item[f"antecedent{which + 1}_start"]
        if (
            group[0][0] <= start <= group[-1][0] + len(group[-1][1])
            and place != item[f"name{which + 1}_start"]
        ):
            problems.append(f"name{which + 1} is not where antecedent{which + 1} was")
    return problems


def _groups(
    item: dict[str, Any], old: list[tuple[int, str]], new: list[str]
) -> list[tuple[int, list[tuple[int, str]]]] | None:
    """(antecedent, its old words) for each new name, or None when the old words split no such way."""
    if not new:
        return [] if not old else None
    names = (item["name1"], item["name2"])
    words = [_words(item[f"antecedent{k}"]) for k in (1, 2)]
    for which in (0, 1):
        suffix = new[0].removeprefix(names[which])
        if not new[0].startswith(names[which]) or suffix not in ("", "s", "es"):
            continue
        allowed = words[which] | _NOT_NAMES | TITLES
        for end in range(1, len(old) + 1):
            found = {w for _, token in old[:end] for w in _words(token)}
            replaced = {w if w in allowed else w.removesuffix(suffix) for w in found}
            if replaced & words[which] and replaced <= allowed and not replaced & words[1 - which] - allowed:
                rest = _groups(item, old[end:], new[1:])
                if rest is not None:
                    return [(which, old[:end]), *rest]
    return None


def _words(text: str) -> set[str]:
    """Lower-cased words of a text, each without a possessive ("Daddy's" -> "daddy")."""
    return {w.lower() for token in text.split() for w in re.findall(r"\w+", _POSSESSIVE.sub("", token))}


def _at(item: dict[str, Any], span: tuple[int, int]) -> str:
    return str(item["perturbed_sentence"][span[0] : span[1]])


def test_every_kept_gold_item_keeps_its_judged_answer(
    prepared: tuple[list[dict[str, Any]], list[Any], int],
) -> None:
    items, stages, total = prepared
    dropped = {f"{stage.name}/{reason}": n for stage in stages for reason, n in stage.stats.dropped.items()}
    renamed = sum(len(name_mentions(item).mentions) for item in items)
    report = f"{total} gold items, {len(items)} kept ({renamed} other mentions renamed), dropped: {dropped}"
    log.info(report)
    assert sum(dropped.values()) == total - len(items), report
    broken = {}
    for item in items:
        problems = answer_problems(item)
        task = resolution_task(item, ORDER_SEED)["data"]
        number = {"antecedent1": 1, "antecedent2": 2}.get(item["referent"])
        if number is not None:
            # The resolver who reads the renamed sentence right answers the name at the referent's place.
            shown = _at(item, (item[f"name{number}_start"], item[f"name{number}_end"]))
            if task["answer_identity"].get(shown) != item["referent"]:
                problems.append(f"answering {shown!r} does not mean {item['referent']}")
        if problems:
            broken[item["candidate_id"]] = (item["sentence"], item["perturbed_sentence"], problems)
    assert not broken, f"{len(broken)} of {len(items)} kept items break the answer ({report}): {broken}"
    for_mentions = sum(n for key, n in dropped.items() if key.startswith("name_mention/"))
    assert for_mentions <= MOST_DROPPED_FOR_MENTIONS * total, report
    assert Counter(item["referent"] for item in items).keys() == {"antecedent1", "antecedent2", "unclear"}


def test_the_check_catches_a_swapped_and_a_leftover_name(
    prepared: tuple[list[dict[str, Any]], list[Any], int],
) -> None:
    item = next(item for item in prepared[0] if name_mentions(item).mentions)
    assert not answer_problems(item)
    swapped = dict(item, name1=item["name2"], name2=item["name1"])
    swapped |= {"name1_start": item["name2_start"], "name1_end": item["name2_end"]}
    swapped |= {"name2_start": item["name1_start"], "name2_end": item["name1_end"]}
    assert answer_problems(swapped)
    # The last mention (after both antecedents) left as it was.
    mention = name_mentions(item).mentions[-1]
    head, name, tail = item["perturbed_sentence"].rpartition(item[f"name{mention.which + 1}"])
    left = head + item["sentence"][mention.start : mention.end] + tail
    assert name and any("left" in problem for problem in answer_problems(dict(item, perturbed_sentence=left)))
