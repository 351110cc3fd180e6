"""Start a local Prefect server (127.0.0.1:4200) and serve the scheduled deployments; the server is
stopped with them (one that was running before is left running).

    knowref60k serve [--dumps DIR] [--out DIR]      (make serve; both default to the home folder's)

- `watch-dumps`: every hour, processes each new or changed RC_*.zst / RC_*.ndjson of the dumps folder
  (monthly dumps appear once a month; an hourly look costs a directory listing and a few stat calls).
- `labelling-sync`: every two minutes, collects both stages' votes and sets every task's queue state (the
  vote receiver, started here too, does this for each vote as it arrives; the sync repairs what it missed)
  and sends the items screening accepted on to resolution.
- `monthly-release-candidate`: on the 2nd of every month at 06:00 UTC, collects votes and cuts rc-YYYY.MM.DD.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

from knowref60k.core.io import private_dir
from knowref60k.core.paths import home

PORT = 4200
API = f"http://127.0.0.1:{PORT}/api"
# How often the labelling loop is collected and decided tasks closed: a vote takes annotators about 10 s,
# a collect of 50,000 annotations under 40 s (docs/measurements.md, "Label Studio at scale").
SYNC_MINUTES = 2


def prefect_server_running() -> bool:
    try:
        with urllib.request.urlopen(f"{API}/health", timeout=3) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def start_prefect_server() -> subprocess.Popen[bytes] | None:
    """Start the Prefect server unless one answers; returns the process started (None if none was)."""
    if prefect_server_running():
        return None
    log = private_dir(Path(os.environ.get("PREFECT_HOME") or home() / ".prefect")) / "server.log"
    with log.open("ab") as handle:
        server = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(PORT)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + 120
    while not prefect_server_running():
        if time.monotonic() > deadline:
            stop_prefect_server(server)
            raise SystemExit(f"Prefect server did not start; see {log}")
        time.sleep(1)
    return server


def stop_prefect_server(server: subprocess.Popen[bytes]) -> None:
    """Stop the server this command started, and what it started (it runs in a session of its own)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def start_receiver(items: Path) -> str:
    """The vote receiver of the local Label Studio (settles each vote; the sync repairs what it misses),
    unless one runs: that one is left as it is, with the item folders it was started with."""
    from knowref60k.settings.effective import labelling_settings
    from knowref60k_annotation.receiver import ReceiverProcess
    from knowref60k_annotation.settings import load_settings, receiver_url

    receiver = ReceiverProcess(load_settings(create=True))
    if receiver.healthy():
        return f"vote receiver already running at {receiver_url(receiver.settings)}: left as it is"
    return receiver.start(labelling_settings(), [items])


def main(dumps: Path, out: Path) -> int:
    """`knowref60k serve`: serve the deployments on `dumps` into `out` until stopped; the Prefect server
    started for them is stopped on the way out (Ctrl-C, SIGTERM)."""
    started = start_prefect_server()
    try:
        return serve_deployments(str(dumps), str(out))
    finally:
        if started is not None:
            stop_prefect_server(started)


def serve_deployments(dumps: str, out: str) -> int:
    """Serve the scheduled deployments until stopped (the vote receiver started first)."""
    print(start_receiver(Path(out) / "items"), flush=True)
    os.environ["PREFECT_API_URL"] = API
    from prefect import serve

    from knowref60k_flows.annotate import sync_flow
    from knowref60k_flows.watch import release_candidate_flow, watch_flow

    print(f"Prefect UI: http://127.0.0.1:{PORT}  (watching {dumps}; Ctrl-C stops serving)", flush=True)
    serve(
        watch_flow.to_deployment(
            name="watch-dumps",
            interval=timedelta(hours=1),
            parameters={"dumps_dir": dumps, "out_dir": out},
        ),
        sync_flow.to_deployment(
            name="labelling-sync",
            interval=timedelta(minutes=SYNC_MINUTES),
            parameters={"items_dir": str(Path(out) / "items")},
        ),
        release_candidate_flow.to_deployment(
            name="monthly-release-candidate", cron="0 6 2 * *", parameters={"run_dir": out}
        ),
    )
    return 0
