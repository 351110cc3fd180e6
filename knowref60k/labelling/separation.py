"""Screeners never resolve: the votes each account may cast, given its role.

Perturbation exists so that resolvers cannot use what they know about the real people; an account that
saw an item's original sentence must not resolve its renamed twin. Label Studio Community cannot stop an
account from opening the other project, so the rule is enforced on the votes: a vote the roles forbid is
refused (kept aside with its reason and counted, never used)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from knowref60k.labelling.decisions import RESOLUTION, SCREENING

ROLE_STAGES = {"screener": SCREENING, "resolver": RESOLUTION}
STAGE_ROLES = {stage: role for role, stage in ROLE_STAGES.items()}
NO_ROLE, WRONG_ROLE, SCREENED_THIS_ITEM = "no_role", "wrong_role", "screened_this_item"
# An annotation whose result is not one choice of its stage's (any account can post one through the API).
MALFORMED_RESULT, NOT_A_CHOICE = "malformed_result", "not_a_choice_of_the_stage"
# An annotation another account wrote than the one it names as its author (`completed_by` is whatever the
# writer posted; Label Studio records the writer itself as `updated_by`).
NOT_ITS_AUTHOR = "not_its_author"
# Votes on a task the pipeline did not import, or whose shown data is not what the pipeline gave it (any
# account can change a task's data); and a later version of a vote the pipeline had already seen (the
# first version seen is the one that counts).
TASK_NOT_RECORDED, TASK_DATA_CHANGED = "task_not_recorded", "task_data_changed"
CHANGED_AFTER_SEEN = "changed_after_seen"
# Every vote of an account paused for its accuracy on control items (kept aside until the lead resumes it).
ACCOUNT_PAUSED = "account_paused"


@dataclass
class Separated:
    accepted: list[dict[str, Any]] = field(default_factory=list)
    refused: list[tuple[dict[str, Any], str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(reason for _, reason in self.refused).items()))


def separate(
    votes: Iterable[dict[str, Any]], role_of: Mapping[int, str | None], paused: Collection[int] = ()
) -> Separated:
    """Accept a vote when its annotator has the stage's role, is not paused and, for a resolution vote,
    did not screen the same item (even with a vote refused for its role)."""
    votes = list(votes)
    screened = {(vote["item_id"], vote["annotator_id"]) for vote in votes if vote["stage"] == SCREENING}
    result = Separated()
    for vote in votes:
        role = role_of.get(vote["annotator_id"])
        if role is None:
            result.refused.append((vote, NO_ROLE))
        elif ROLE_STAGES[role] != vote["stage"]:
            result.refused.append((vote, WRONG_ROLE))
        elif vote["stage"] == RESOLUTION and (vote["item_id"], vote["annotator_id"]) in screened:
            result.refused.append((vote, SCREENED_THIS_ITEM))
        elif vote["annotator_id"] in paused:
            result.refused.append((vote, ACCOUNT_PAUSED))
        else:
            result.accepted.append(vote)
    return result


def explain(vote: Mapping[str, Any], reason: str, email: str) -> str:
    """One line for a person: which vote was refused, and why."""
    item = f"{vote['stage']} vote of {email} on item {vote['item_id']}"
    if reason == NO_ROLE:
        enrol = f"knowref60k annotate users --role ... --email {email}"
        return f"refused the {item}: the account has no role ({enrol})"
    if reason == WRONG_ROLE:
        return f"refused the {item}: the account is not a {STAGE_ROLES[vote['stage']]}"
    if reason in (MALFORMED_RESULT, NOT_A_CHOICE):
        return f"refused the {item}: its result is not one of the stage's choices ({vote['choice']})"
    if reason == NOT_ITS_AUTHOR:
        writer = vote.get("written_by")
        return f"refused the {item}: written by another account ({writer or 'unknown'}) than the one it names"
    if reason == TASK_NOT_RECORDED:
        return f"refused the {item}: its task {vote['task_id']} is not one the pipeline imported"
    if reason == TASK_DATA_CHANGED:
        return f"refused the {item}: what its task {vote['task_id']} shows is not what the pipeline gave it"
    if reason == ACCOUNT_PAUSED:
        resume = f"knowref60k annotate resume {email}"
        return f"set aside the {item}: the account is paused for its accuracy on control items ({resume})"
    if reason == CHANGED_AFTER_SEEN:
        return f"refused the {item}: a later version of a vote already seen (the first one counts)"
    return (
        f"refused the {item}: that account screened the item, and screeners never resolve what they screened"
    )
