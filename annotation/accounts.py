"""Annotator accounts and their roles.

Screeners see the original sentences, resolvers the renamed ones; an account that saw an original must
never resolve its renamed twin, so every account has one role, for good. The record of accounts and roles
is `annotators.json` in the server's state folder (mode 600: it holds the passwords of the accounts made
here). Label Studio Community has no roles of its own: `collect` enforces them on the votes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import orjson

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.labelling.separation import ROLE_STAGES

from .labelstudio_app.labelstudio_contract import CSRF_COOKIE, CSRF_FIELD, SIGN_UP_FIELDS, SIGN_UP_PATH
from .settings import Settings, write_private

if TYPE_CHECKING:
    from .client import LabelStudioClient

SIMULATED_PREFIX = "simulated-"
DOMAIN = "knowref60k.local"
# Accounts one call may make: a team is dozens, and a mistyped count would sign up accounts until stopped.
MAX_NEW_ACCOUNTS = 1000


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


def submit_form(session: httpx.Client, settings: Settings, path: str, email: str, password: str) -> int:
    """Fill in Label Studio's sign-up or login form as a browser does (with its CSRF cookie); the status
    of the answer (302 when it worked)."""
    try:
        session.get(path)
        email_field, password_field = SIGN_UP_FIELDS
        fields = {email_field: email, password_field: password, CSRF_FIELD: session.cookies[CSRF_COOKIE]}
        referer = {"Referer": f"{settings.url}{path}"}
        response = session.post(path, data=fields, headers=referer, follow_redirects=False)
    except httpx.TransportError as error:
        raise ServiceUnavailable(f"Label Studio is not reachable at {settings.url} ({error})") from None
    return response.status_code


def sign_up(settings: Settings, email: str, password: str) -> None:
    """Create a working annotator the way a person would (the API's users.create leaves the user
    outside the organization and ignores the password: docs/decisions.md, "Label Studio")."""
    with httpx.Client(base_url=settings.url, timeout=60) as session:
        status = submit_form(session, settings, SIGN_UP_PATH, email, password)
    if status != 302:
        raise UserError(f"signing up {email} failed: {status} (does the user exist already?)")


def create_accounts(client: LabelStudioClient, role: str, count: int, prefix: str = "") -> list[Account]:
    """`count` new accounts of `role` (emails `{prefix}{role}-N@knowref60k.local`) that can log in and
    label; recorded before they are returned."""
    check_role({}, "", role)
    check_count(count)
    taken = {user["email"] for user in client.users()}
    made: list[Account] = []
    number = 1
    while len(made) < count:
        email = f"{prefix}{role}-{number}@{DOMAIN}"
        number += 1
        if email not in taken:
            password = secrets.token_urlsafe(12)
            sign_up(client.settings, email, password)
            made.append(Account(email, password, client.user_id(email), role))
            save_accounts(client.settings, made[-1:])  # on record before the next: a stop loses none
    return made


def check_count(count: int) -> None:
    if not 0 <= count <= MAX_NEW_ACCOUNTS:
        raise UserError(f"--count {count}: accounts are made 0 to {MAX_NEW_ACCOUNTS:,} at a time")


def enrol(client: LabelStudioClient, email: str, role: str) -> Account:
    """Give an account a role: an existing user keeps their password (not on record here); an unknown
    email is signed up with a new one."""
    check_role({account.email: account for account in load_accounts(client.settings)}, email, role)
    users = {user["email"]: user["id"] for user in client.users()}
    password = None
    if email not in users:
        password = secrets.token_urlsafe(12)
        sign_up(client.settings, email, password)
    account = Account(email, password, users.get(email) or client.user_id(email), role)
    save_accounts(client.settings, [account])
    return account


def ensure_accounts(client: LabelStudioClient, role: str, count: int, prefix: str = "") -> list[Account]:
    """`count` accounts of `role` with this prefix: those on record that the server still has, plus new."""
    present = {user["email"] for user in client.users()}
    usable = [
        account
        for account in load_accounts(client.settings)
        if account.role == role and account.email.startswith(f"{prefix}{role}-") and account.email in present
    ]
    if len(usable) < count:
        usable += create_accounts(client, role, count - len(usable), prefix)
    return sorted(usable, key=lambda account: account.email)[:count]
