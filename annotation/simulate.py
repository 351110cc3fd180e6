"""Simulated annotators, FOR DEMOS, TESTS AND BENCHMARKS ONLY: real accounts (emails starting with
`simulated-`) that log in, take their next task from Label Studio's labelling stream and vote through
the API, as a person's browser does.

- screeners answer from a truth per item (the judged gold set in the demo) with a given accuracy; a
  wrong answer on an invalid item calls it valid, on a valid item gives a random reason;
- resolvers answer from a truth per item (the judged referent in the demo, `reddit_referents.jsonl`),
  each account right with an accuracy of its own; a wrong answer is one of the two other choices; on an
  item whose referent a careful reader cannot tell (`unclear`) they split between the two names, as
  people do, so that the rule rejects it as ambiguous;
- a clicker answers at random, whatever the item (an account to be caught by the controls).

The k-th vote on an item draws its chance from (seed, item, k), whichever account Label Studio serves it
to, and is right when that chance is below the account's accuracy: a rerun gives the same answers but for
the order in which Label Studio happens to serve the accounts.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.labelling.decisions import NAMES, RESOLUTION_CHOICES, SCREENING_REASONS, VALID
from knowref60k.labelling.referents import UNCLEAR

from .accounts import submit_form
from .labelstudio_app.labelstudio_contract import (
    LOGIN_PATH,
    NEXT_TASK_PATH,
    TASK_ANNOTATIONS_PATH,
    USER_TOKEN_PATH,
)
from .roster import Account
from .settings import Settings

# (item id, how many votes the simulation cast on it before, the voting account's email) -> answer code.
Answer = Callable[[str, int, str], str]
# How far simulated resolvers' accuracies spread around their mean: a Beta distribution of this
# concentration (a mean of 0.9 gives a standard deviation of about 0.05).
ACCURACY_CONCENTRATION = 30.0
SERVER_ERROR_TRIES = 4


class AnnotatorSession:
    """One account logged in to Label Studio, working through a project's labelling stream."""

    def __init__(self, settings: Settings, account: Account, timeout: float = 60) -> None:
        if account.password is None:
            raise UserError(
                f"no password on record for {account.email}: only accounts made here can be simulated"
            )
        self.account = account
        token = _token(settings, account.email, account.password)
        self.http = httpx.Client(
            base_url=settings.url, timeout=timeout, headers={"Authorization": f"Token {token}"}
        )

    def close(self) -> None:
        self.http.close()

    def next_task(self, project: int) -> dict[str, Any] | None:
        """The task Label Studio serves this annotator next; None when it serves none (or refuses it the
        project)."""
        response = self._send("GET", NEXT_TASK_PATH.format(project=project))
        # 403: the access gate took the project from a paused account.
        if response.status_code in (403, 404):
            return None
        response.raise_for_status()
        task: dict[str, Any] = response.json()
        return task

    def vote(self, task: Mapping[str, Any], code: str, from_name: str, lead_time: float = 5.0) -> int | None:
        """Submit the answer whose code is `code`; returns the annotation's id, None when the access gate
        refuses it (the account was paused after it was served the task)."""
        label = next(label for label, value in task["data"]["answer_identity"].items() if value == code)
        result = [
            {"from_name": from_name, "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
        ]
        response = self._send(
            "POST",
            TASK_ANNOTATIONS_PATH.format(task=task["id"]),
            json={"result": result, "lead_time": lead_time},
        )
        if response.status_code == 403:
            return None
        response.raise_for_status()
        return int(response.json()["id"])

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The response; a server error (SQLite's "database is locked" under load) is tried again a few
        times, as a person would reload the page."""
        tries = 0
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as error:
                raise ServiceUnavailable(
                    f"Label Studio is not reachable at {self.http.base_url} ({error})"
                ) from None
            tries += 1
            if response.status_code < 500 or tries == SERVER_ERROR_TRIES:
                return response
            time.sleep(0.5 * 2**tries)


def _token(settings: Settings, email: str, password: str) -> str:
    """The account's API token, read after logging in through the login form."""
    with httpx.Client(base_url=settings.url, timeout=60) as session:
        status = submit_form(session, settings, LOGIN_PATH, email, password)
        if status != 302:
            raise UserError(f"{email} could not log in to {settings.url} ({status})")
        try:
            return str(session.get(USER_TOKEN_PATH).json()["token"])
        except httpx.TransportError as error:
            raise ServiceUnavailable(f"Label Studio is not reachable at {settings.url} ({error})") from None


def _rng(seed: int, item_id: str, index: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{item_id}\x1f{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def account_accuracies(emails: Sequence[str], mean: float, seed: int) -> dict[str, float]:
    """An accuracy per account, drawn from a Beta distribution around `mean` (seeded by the account), then
    shifted together so that their mean is `mean` exactly; each within [0, 1]."""
    if not emails:
        return {}
    if mean <= 0 or mean >= 1:
        return {email: min(max(mean, 0.0), 1.0) for email in emails}
    drawn = {}
    for email in emails:
        digest = hashlib.sha256(f"{seed}\x1faccuracy\x1f{email}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        drawn[email] = rng.betavariate(mean * ACCURACY_CONCENTRATION, (1 - mean) * ACCURACY_CONCENTRATION)
    shift = mean - sum(drawn.values()) / len(drawn)
    return {email: round(min(max(value + shift, 0.0), 1.0), 4) for email, value in drawn.items()}


def resolver(truth: Callable[[str], str], accuracy: Callable[[str], float], seed: int) -> Answer:
    """Right with the voting account's `accuracy` on an item whose truth is a name or "neither"; on an
    unclear item, one of the two names at random."""

    def answer(item_id: str, index: int, email: str) -> str:
        rng, right = _rng(seed, item_id, index), truth(item_id)
        if right == UNCLEAR:
            return rng.choice(NAMES)
        if rng.random() < accuracy(email):
            return right
        return rng.choice([choice for choice in RESOLUTION_CHOICES if choice != right])

    return answer


def clicker(seed: int, choices: Sequence[str] = RESOLUTION_CHOICES) -> Answer:
    """An account that answers at random among the stage's `choices`, whatever the item."""

    def answer(item_id: str, _index: int, email: str) -> str:
        digest = hashlib.sha256(f"{seed}\x1fclick\x1f{item_id}\x1f{email}".encode()).digest()
        return choices[int.from_bytes(digest[:8], "big") % len(choices)]

    return answer


def with_clickers(answer: Answer, honest: set[str], click: Answer) -> Answer:
    """`answer` for the `honest` accounts, `click` for every other."""

    def chosen(item_id: str, index: int, email: str) -> str:
        return (answer if email in honest else click)(item_id, index, email)

    return chosen


def screener(truth: Callable[[str], str], accuracy: float, seed: int) -> Answer:
    def answer(item_id: str, index: int, _email: str) -> str:
        rng, right = _rng(seed, item_id, index), truth(item_id)
        if rng.random() < accuracy:
            return right
        return rng.choice(SCREENING_REASONS) if right == VALID else VALID

    return answer


@dataclass
class Work:
    """What a simulation did: votes cast per account, and the accuracy each resolver was given (a clicker's
    is None)."""

    votes: dict[str, int] = field(default_factory=dict)
    accuracy: dict[str, float | None] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.votes.values())


@dataclass
class Stream:
    """What the annotators of one simulation share: how many votes each item has had (so the k-th vote
    on an item gets the k-th answer, whoever casts it) and who is out of work."""

    idle_settled: Callable[[int], bool]  # given the votes cast so far
    cast: Counter[str] = field(default_factory=Counter)
    idle: set[str] = field(default_factory=set)
    # Every vote was settled while everyone was idle: each annotator asks once more before the end.
    confirming: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_vote(self, item_id: str) -> int:
        with self.lock:
            self.cast[item_id] += 1
            return self.cast[item_id] - 1

    def out_of_work(self, email: str, annotators: int) -> bool:
        """Whether the simulation is over: every annotator was served nothing after every vote was
        settled. A task waiting for its overlap to be raised is served again once it is, so an annotator
        served nothing waits rather than leaves; and an annotator's "nothing" from before the last settle
        is stale (the settle may have opened a slot only they can take), so once everyone is idle and
        every vote settled, each asks once more."""
        with self.lock:  # held while the receiver is asked: two annotators must not both decide
            self.idle.add(email)
            if len(self.idle) == annotators and self.idle_settled(sum(self.cast.values())):
                if self.confirming:
                    self.finished.set()
                else:
                    self.confirming = True
                    self.idle.clear()
        return self.finished.is_set()

    def working(self, email: str) -> None:
        with self.lock:
            self.idle.discard(email)
            self.confirming = False


def work_through(
    sessions: Sequence[AnnotatorSession],
    project: int,
    from_name: str,
    answer: Answer,
    idle_settled: Callable[[int], bool],
    item_of: Callable[[Mapping[str, Any]], str] | None = None,
    pause: float = 0.3,
) -> Work:
    """The annotators work at the same time, a thread each, as people do: ask for the next task, vote,
    until none of them is served anything and `idle_settled(votes cast)` says every vote has reached the
    vote receiver and been settled by it, as in production. `item_of` tells the item a served task holds
    (the pipeline's records, where a task's data does not say: a control's); by default its data's."""
    find_item = item_of or (lambda task: str(task["data"]["item_id"]))
    work = Work({session.account.email: 0 for session in sessions})
    stream = Stream(idle_settled)
    failures: list[BaseException] = []

    def annotate(session: AnnotatorSession) -> None:
        email = session.account.email
        try:
            while not stream.finished.is_set():
                task = session.next_task(project)
                if task is None:
                    if not stream.out_of_work(email, len(sessions)):
                        time.sleep(pause)
                    continue
                stream.working(email)
                item_id = find_item(task)
                if (
                    session.vote(task, answer(item_id, stream.next_vote(item_id), email), from_name)
                    is not None
                ):
                    work.votes[email] += 1
        except BaseException as error:  # the caller raises it; the others stop
            failures.append(error)
            stream.finished.set()

    threads = [threading.Thread(target=annotate, args=(session,)) for session in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return work
