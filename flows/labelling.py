"""Prefect tasks shared by the run and the demo: start Label Studio, push, accounts, simulation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from prefect import task

from annotation.client import LabelStudioClient, read_items, save_accounts
from annotation.server import Server
from annotation.settings import STATE_DIR, Settings
from annotation.tasks import ORDER_SEED, simulated_truth
from flows.common import RETRIES

ACCOUNTS_FILE = STATE_DIR / "annotators.json"


@task
def start_label_studio(settings: Settings, state_dir: str = str(STATE_DIR)) -> str:
    return Server(settings, Path(state_dir)).start()


@task(**RETRIES, retry_delay_seconds=30)
def push(settings: Settings, items: list[str]) -> dict[str, Any]:
    with LabelStudioClient(settings) as client:
        report = client.push(read_items(Path(p) for p in items), ORDER_SEED)
    return {"pushed": report.pushed, "already_there": report.already_there, "tasks": report.tasks_in_project}


@task
def ensure_annotators(settings: Settings, count: int) -> list[dict[str, Any]]:
    """`count` annotator logins: those made before (in .labelstudio/annotators.json), plus new ones."""
    known = orjson.loads(ACCOUNTS_FILE.read_bytes()) if ACCOUNTS_FILE.exists() else []
    with LabelStudioClient(settings) as client:
        existing = {user["email"] for user in client.users()}
        usable = [account for account in known if account["email"] in existing]
        if len(usable) < count:
            made = client.create_annotators(count - len(usable))
            save_accounts(ACCOUNTS_FILE, made)
            usable += [{"email": a.email, "password": a.password, "user_id": a.user_id} for a in made]
    return usable[:count]


@task
def simulate(settings: Settings, annotators: int, accuracy: float, seed: int) -> int:
    with LabelStudioClient(settings) as client:
        return client.simulate(annotators, accuracy, seed, simulated_truth(seed))
