"""Control items: tasks whose answer the team knows (judged by hand), mixed among the real tasks so that
each annotator's accuracy can be measured. Their answers never leave this machine: Label Studio only
sees an ordinary task whose item id starts with `control:`.

A controls file is JSON Lines, one item a line: the fields a task of its stage shows (as in an items
file) plus `stage` (screening or resolution) and `answer` (an answer code of that stage).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.errors import UserError
from knowref60k.core.paths import DATA_DIR
from knowref60k.labelling.decisions import CHOICES, RESOLUTION, SCREENING
from knowref60k.labelling.quality import CONTROL_PREFIX

# What a task of each stage is made of (annotation/tasks.py), besides the id; `sentence` is the original
# one, which no control may share with an item.
SHOWN_FIELDS = {
    SCREENING: (
        "sentence",
        "antecedent1_start",
        "antecedent1_end",
        "antecedent2_start",
        "antecedent2_end",
        "pronoun_start",
        "pronoun_end",
    ),
    RESOLUTION: (
        "sentence",
        "perturbed_sentence",
        "perturbed_pronoun_start",
        "perturbed_pronoun_end",
        "name1",
        "name2",
    ),
}
DEFAULT_CONTROLS = DATA_DIR / "eval" / "screening_controls.jsonl"
# Renamed as any item, with the judged referent as the answer (tools/eval/build_controls.py).
RESOLUTION_CONTROLS = DATA_DIR / "eval" / "resolution_controls.jsonl"


def load_controls(path: Path) -> list[dict[str, Any]]:
    """The control items of a file, their ids marked as controls; a bad line is a UserError naming it."""
    if not path.is_file():
        raise UserError(f"controls file not found: {path}")
    controls = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            row = orjson.loads(line)
            if row["answer"] not in CHOICES[row["stage"]]:
                raise ValueError(f"answer {row['answer']!r} is not one of {CHOICES[row['stage']]}")
            missing = [name for name in SHOWN_FIELDS[row["stage"]] if name not in row]
            if missing:
                raise ValueError(f"a {row['stage']} control needs {', '.join(missing)}")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise UserError(f"{path}, line {number}: not a control item ({error})") from None
        controls.append({**row, "candidate_id": CONTROL_PREFIX + row["candidate_id"]})
    return controls


def control_answers(paths: Iterable[str | Path]) -> dict[str, str]:
    """Control item id -> its known answer, over every file."""
    return {row["candidate_id"]: row["answer"] for path in paths for row in load_controls(Path(path))}


def draw_controls(
    controls: Sequence[Mapping[str, Any]],
    stage: str,
    items: int,
    share: float,
    exclude: Iterable[str],
    seed: int,
) -> list[Mapping[str, Any]]:
    """Controls of `stage` to push beside `items` real ones so that they make `share` of the tasks, drawn
    by a seeded hash order (the same draw on every machine); never one whose sentence or id is among
    `exclude`."""
    if share <= 0 or items == 0:
        return []
    excluded = set(exclude)
    pool = [
        row
        for row in controls
        if row["stage"] == stage and row["sentence"] not in excluded and row["candidate_id"] not in excluded
    ]
    wanted = min(len(pool), round(items * share / (1 - share)))

    def order(row: Mapping[str, Any]) -> bytes:
        return hashlib.sha256(f"{seed}\x1fcontrol\x1f{row['candidate_id']}".encode()).digest()

    return sorted(pool, key=order)[:wanted]
