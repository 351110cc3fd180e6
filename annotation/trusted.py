"""The votes of one stage's project as the pipeline trusts them: each annotation as first seen (the
ledger), on the task the pipeline recorded with the data it gave it (the records), whatever Label Studio
shows now.

An annotation on a task the pipeline did not import, or whose shown data was changed, is refused with the
reason; so is a later version of an annotation already seen (its first version counts). An annotation gone
from Label Studio (deleted, its task or project deleted) still counts as first seen, and is reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from knowref60k.labelling.separation import CHANGED_AFTER_SEEN

from .ledger import VoteLedger
from .records import Records, data_problem, hidden_changes
from .votes import ExportVotes, refused_vote, votes_from_export


@dataclass
class Trusted:
    read: ExportVotes
    # What differs between Label Studio and the pipeline's own records, by kind: tasks not recorded, tasks
    # whose shown or hidden data changed, annotations changed or gone after they were seen.
    differences: Counter[str] = field(default_factory=Counter)


def trusted_votes(
    records: Records,
    ledger: VoteLedger,
    stage: str,
    project: int,
    exported: list[dict[str, Any]] | None,
    simulated: frozenset[int],
) -> Trusted:
    """The stage's votes; `exported` is the project's export, None when the project is gone."""
    recorded = records.tasks_of(project)
    refused: list[tuple[dict[str, Any], str]] = []
    differences: Counter[str] = Counter()
    present: dict[tuple[int, int], Mapping[str, Any]] = {}
    refused_tasks: set[int] = set()
    if exported is None:
        differences["project_gone"] = 1
    for task in exported or []:
        task_id, annotations = int(task["id"]), task.get("annotations") or []
        present.update(((task_id, a["id"]), a) for a in annotations if isinstance(a.get("id"), int))
        known = recorded.get(task_id)
        problem = data_problem(known, task.get("data"))
        if problem is not None:
            differences[problem] += 1
            refused_tasks.add(task_id)
            item = known.item_id if known else str((task.get("data") or {}).get("item_id"))[:100]
            refused += [(refused_vote(stage, task_id, item, a, simulated), problem) for a in annotations]
        elif known is not None and hidden_changes(known, task.get("data")):
            differences["task_hidden_data_changed"] += 1
    if exported is not None:
        ledger.observe(project, ((int(t["id"]), t.get("annotations") or []) for t in exported))
    seen = ledger.seen(project, recorded)
    for task_id, firsts in seen.first_by_task.items():
        for first in firsts:
            key = (task_id, first["id"])
            if key in seen.changed and key in present and task_id not in refused_tasks:
                differences["changed_after_seen"] += 1
                vote = refused_vote(stage, task_id, recorded[task_id].item_id, present[key], simulated)
                refused.append((vote, CHANGED_AFTER_SEEN))
            if exported is not None and key not in present:
                differences["gone_after_seen"] += 1
    tasks = [
        recorded[task_id].with_annotations(firsts)
        for task_id, firsts in seen.first_by_task.items()
        if task_id not in refused_tasks
    ]
    read = votes_from_export(tasks, stage, simulated)
    read.refused[:0] = refused
    return Trusted(read, differences)
