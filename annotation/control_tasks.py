"""Control tasks among a project's items: how many its items call for, which ones, and dressed so that no
annotator can tell them from items.

A control is pushed in the same import as the items it accompanies, with the validity score of one of
them (chosen by a keyed hash), so that its place in the labelling stream and the prediction Label Studio
holds for it look like an item's; its task names it by a keyed hash shaped like a candidate id
(`LabelStudioClient.import_tasks`). Only the pipeline's records know which tasks are controls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from knowref60k.labelling.controls import draw_controls
from knowref60k.labelling.quality import CONTROL_PREFIX, is_control

from .client import SCORE_COLUMN, LabelStudioClient
from .tasks import ORDER_SEED


def with_controls(
    client: LabelStudioClient,
    stage: str,
    project: int,
    rows: Iterable[Mapping[str, Any]],
    controls: Sequence[Mapping[str, Any]],
    share: float,
) -> list[Mapping[str, Any]]:
    """`rows`, the items about to be pushed into the project, and the controls (of `controls`, the rows
    of the config's controls files) that make its tasks `share` controls once they are in: drawn the same
    way every time, so a repeated push adds none; never one whose gold sentence is an item's."""
    rows = list(rows)
    recorded = list(client.records.tasks_of(project).values())
    present = {task.item_id for task in recorded}
    new = [row for row in rows if row["candidate_id"] not in present and not is_control(row["candidate_id"])]
    items = [task for task in recorded if not is_control(task.item_id)]
    exclude = {CONTROL_PREFIX + task.item_id for task in items} | {
        task.sentence for task in items if task.sentence
    }
    exclude |= {CONTROL_PREFIX + row["candidate_id"] for row in new} | {row["sentence"] for row in new}
    drawn = draw_controls(controls, stage, len(items) + len(new), share, exclude, ORDER_SEED)
    scores = [row[SCORE_COLUMN] for row in new if row.get(SCORE_COLUMN) is not None]
    missing = [control for control in drawn if control["candidate_id"] not in present]
    return [*rows, *(_scored_like_items(client, control, scores) for control in missing)]


def _scored_like_items(
    client: LabelStudioClient, control: Mapping[str, Any], scores: Sequence[float]
) -> Mapping[str, Any]:
    if not scores:
        return control
    pick = int.from_bytes(client.keyed(f"score\x1f{control['candidate_id']}")[:8], "big") % len(scores)
    return {**control, SCORE_COLUMN: scores[pick]}
