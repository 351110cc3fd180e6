"""Prefect flows for unattended runs: process each new monthly dump of a folder, and cut a release
candidate on a schedule. `knowref60k serve` (make serve) serves both as deployments."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from prefect import flow, get_run_logger

from knowref60k.ingest.ledger import Ledger, settled
from knowref60k.settings.effective import RunConfig
from knowref60k_flows.labelling import push
from knowref60k_flows.pipeline import pipeline_flow
from knowref60k_flows.release import release_flow

DUMP_PATTERNS = ("RC_*.zst", "RC_*.ndjson")
# How long a dump must keep its size and modification time to be taken as complete: a download or copy
# into the folder that is still running changes them within this time (waited only when there is work).
SETTLE_SECONDS = 60.0


@flow(name="watch-dumps")
def watch_flow(
    dumps_dir: str,
    out_dir: str = "output/run",
    config_path: str | None = None,
    push_items: bool = True,
    settle_seconds: float = SETTLE_SECONDS,
) -> dict[str, Any]:
    """Extract, prepare (and push) every dump of `dumps_dir` the ledger says is not done yet and that
    did not change for `settle_seconds` (one still growing is left for the next run)."""
    logger = get_run_logger()
    ledger = Ledger(Path(out_dir) / "ledger.sqlite")
    settings = RunConfig.load(Path(config_path) if config_path else None)
    settings_hash = settings.fingerprint()
    dumps = [path for pattern in DUMP_PATTERNS for path in Path(dumps_dir).glob(pattern)]
    todo, growing = settled(ledger.pending(dumps, settings_hash), settle_seconds)
    logger.info("%d dumps in %s, %d to process", len(dumps), dumps_dir, len(todo))
    for dump in growing:
        logger.warning(
            "%s changed within %g s: still being written? Left for the next run",
            dump.path.name,
            settle_seconds,
        )
    outcomes: dict[str, str] = {}
    for dump in todo:
        ledger.start(dump, settings_hash)
        try:
            result = pipeline_flow([str(dump.path)], out_dir, settings=settings)
            if push_items:
                from knowref60k_annotation.settings import load_settings

                push(
                    load_settings(), [f["items_path"] for f in result["prepare"]["files"]], settings.labelling
                )
        except Exception as error:  # recorded in the ledger and retried on the next run
            ledger.finish(dump, settings_hash, f"{type(error).__name__}: {error}")
            outcomes[dump.path.name] = "failed"
            logger.error("%s failed: %s", dump.path.name, error)
            continue
        stats = orjson.loads(Path(result["extract"]["files"][0]["stats_path"]).read_bytes())
        ledger.finish(dump, settings_hash, input_check=stats.get("input", {}).get("complete"))
        outcomes[dump.path.name] = "done"
    ledger.close()
    return {"seen": len(dumps), "processed": outcomes, "still_changing": [d.path.name for d in growing]}


@flow(name="release-candidate")
def release_candidate_flow(
    run_dir: str = "output/run", votes_dir: str = "output/annotation", releases_dir: str = "data/releases"
) -> dict[str, Any]:
    """Collect the votes and cut `rc-YYYY.MM.DD` (once a day at most: versions are never overwritten)."""
    version = f"rc-{datetime.now(UTC):%Y.%m.%d}"
    if (Path(releases_dir) / version).exists():
        return {"version": version, "skipped": "exists"}
    return release_flow(version, run_dir, votes_dir, releases_dir)
