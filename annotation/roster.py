"""The record of annotator accounts and their roles: `annotators.json` in the server's state folder
(mode 600: it holds the passwords of the accounts made here).

Screeners see the original sentences, resolvers the renamed ones; an account that saw an original must
never resolve its renamed twin, so every account has one role, for good.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from knowref60k.core.errors import UserError
from knowref60k.labelling.separation import ROLE_STAGES

from .settings import Settings, write_private


@dataclass(frozen=True)
class Account:
    email: str
    password: str | None
    user_id: int
    role: str


def accounts_file(settings: Settings) -> Path:
    return settings.state_dir / "annotators.json"


def load_accounts(settings: Settings) -> list[Account]:
    path = accounts_file(settings)
    if not path.exists():
        return []
    try:
        return [Account(**entry) for entry in orjson.loads(path.read_bytes())]
    except (orjson.JSONDecodeError, TypeError) as error:
        raise UserError(f"{path}: not a list of annotator accounts ({error})") from None


def roles(settings: Settings) -> dict[str, str]:
    """email -> role of every account on record."""
    return {account.email: account.role for account in load_accounts(settings)}


def save_accounts(settings: Settings, accounts: list[Account]) -> None:
    """Add or update accounts on record, refusing any that would change role."""
    known = {account.email: account for account in load_accounts(settings)}
    for account in accounts:
        check_role(known, account.email, account.role)
        known[account.email] = account
    path = accounts_file(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = [asdict(account) for account in known.values()]
    write_private(path, orjson.dumps(payload, option=orjson.OPT_INDENT_2))


def check_role(known: Mapping[str, Account], email: str, role: str) -> None:
    if role not in ROLE_STAGES:
        raise UserError(f"unknown role {role!r}: an annotator is a screener or a resolver")
    if email in known and known[email].role != role:
        raise UserError(
            f"{email} is a {known[email].role}: an account screens or resolves, never both "
            "(someone who saw an original sentence must not resolve its renamed twin)"
        )
