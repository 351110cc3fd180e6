"""The retry policy of the per-file tasks, under real Prefect: a user error fails at once, a server
outage is retried."""

from __future__ import annotations

import pytest
from prefect import flow, task
from prefect.states import Failed

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k_flows.common import RETRIES, is_transient


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (UserError("no such file"), False),
        (ServiceUnavailable("Label Studio is not reachable"), True),
        (OSError("disk hiccup"), True),
    ],
)
def test_only_transient_errors_are_retried(error: Exception, retried: bool) -> None:
    assert is_transient(None, None, Failed(data=error)) is retried  # type: ignore[arg-type]


def attempts_until_done(error: Exception) -> int:
    """How many times Prefect ran a task that raises `error` twice and then succeeds."""
    calls: list[int] = []

    @task(**{**RETRIES, "retry_delay_seconds": 0})
    def flaky() -> int:
        calls.append(1)
        if len(calls) <= 2:
            raise error
        return len(calls)

    @flow
    def run() -> None:
        flaky()

    try:
        run()
    except type(error):
        pass
    return len(calls)


@pytest.mark.integration
def test_prefect_runs_a_user_error_once_and_retries_an_outage() -> None:
    assert attempts_until_done(UserError("candidates file not found: x.parquet")) == 1
    assert attempts_until_done(ServiceUnavailable("Label Studio is not reachable")) == 3
