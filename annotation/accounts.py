"""Annotator accounts: made as a person would sign up, each with one role on record (roster.py).

Label Studio Community has no roles of its own: the Label Studio the pipeline runs is told each account's
projects (knowref60k_gate.py), and `collect` enforces the roles on the votes everywhere.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import httpx

from knowref60k.core.errors import ServiceUnavailable, UserError

from .labelstudio_app.labelstudio_contract import (
    CSRF_COOKIE,
    CSRF_FIELD,
    INVITE_PARAMETER,
    SIGN_UP_FIELDS,
    SIGN_UP_PATH,
)
from .roster import Account, check_role, load_accounts, save_accounts
from .settings import Settings

if TYPE_CHECKING:
    from .client import LabelStudioClient

SIMULATED_PREFIX = "simulated-"
DOMAIN = "knowref60k.local"
# Accounts one call may make: a team is dozens, and a mistyped count would sign up accounts until stopped.
MAX_NEW_ACCOUNTS = 1000


def submit_form(session: httpx.Client, settings: Settings, path: str, email: str, password: str) -> int:
    """Fill in Label Studio's sign-up or login form as a browser does (with its CSRF cookie); the status
    of the answer (302 when it worked)."""
    try:
        session.get(path)
        email_field, password_field = SIGN_UP_FIELDS
        fields = {email_field: email, password_field: password, CSRF_FIELD: session.cookies[CSRF_COOKIE]}
        referer = {"Referer": f"{settings.url}{path.split('?')[0]}"}
        response = session.post(path, data=fields, headers=referer, follow_redirects=False)
    except httpx.TransportError as error:
        raise ServiceUnavailable(f"Label Studio is not reachable at {settings.url} ({error})") from None
    return response.status_code


def sign_up(settings: Settings, email: str, password: str, invite: str | None = None) -> None:
    """Create a working annotator the way a person would (the API's users.create leaves the user
    outside the organization and ignores the password: docs/decisions.md, "Label Studio"), with the
    access gate's invitation when the server has one (knowref60k_gate.py)."""
    path = SIGN_UP_PATH if invite is None else f"{SIGN_UP_PATH}?{urlencode({INVITE_PARAMETER: invite})}"
    with httpx.Client(base_url=settings.url, timeout=60) as session:
        status = submit_form(session, settings, path, email, password)
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
            sign_up(client.settings, email, password, client.invitation())
            made.append(Account(email, password, client.user_id(email), role))
            save_accounts(client.settings, made[-1:])  # on record before the next: a stop loses none
            client.grant_accounts(made[-1:])
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
        sign_up(client.settings, email, password, client.invitation())
    account = Account(email, password, users.get(email) or client.user_id(email), role)
    save_accounts(client.settings, [account])
    client.grant_accounts([account])
    return account


def ensure_accounts(client: LabelStudioClient, role: str, count: int, prefix: str = "") -> list[Account]:
    """`count` accounts of `role` with this prefix: those on record that the server still has, plus new."""
    present = {user["email"] for user in client.users()}
    usable = [
        account
        for account in load_accounts(client.settings)
        if account.role == role and account.email.startswith(f"{prefix}{role}-") and account.email in present
    ]
    client.grant_accounts(usable)
    if len(usable) < count:
        usable += create_accounts(client, role, count - len(usable), prefix)
    return sorted(usable, key=lambda account: account.email)[:count]
