"""Turn candidate files into annotation-ready items: de-duplicate across all dumps, then perturb names."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import UserError
from knowref60k.core.io import (
    CANDIDATE_SCHEMA,
    ITEM_SCHEMA,
    RowWriter,
    atomic_path,
    finished_marker,
    read_rows,
    source_identity,
    write_json_atomic,
)
from knowref60k.core.names import GENDERS, NamePool, perturbation_pool
from knowref60k.core.stats import PipelineStats, StageStats
from knowref60k.core.versioning import code_fingerprint
from knowref60k.prepare.dedup import DedupIndex
from knowref60k.prepare.perturb import perturb

log = logging.getLogger(__name__)

CANDIDATES_SUFFIX = ".candidates.parquet"


@dataclass
class PrepareReport:
    source: Path
    items_path: Path
    report_path: Path
    skipped: bool
    items: int
    stats: PipelineStats
    seconds: float = 0.0


def prepare_stats() -> PipelineStats:
    return PipelineStats(stages={"dedup": StageStats(), "perturb": StageStats()})


def items_stem(candidates_path: Path) -> str:
    name = candidates_path.name
    return name[: -len(CANDIDATES_SUFFIX)] if name.endswith(CANDIDATES_SUFFIX) else candidates_path.stem


def read_candidates(path: Path) -> Iterator[dict[str, Any]]:
    return read_rows(path, CANDIDATE_SCHEMA.names, "candidates")


class Preparer:
    """De-duplication against a persistent index, then perturbation (use as a context manager)."""

    def __init__(self, config: PrepareConfig, index_path: Path) -> None:
        self.config = config
        self.index_path = index_path
        self.fingerprint = f"{config.fingerprint()}-{code_fingerprint(__name__)}"
        self.pools: dict[str, NamePool] = {
            gender: perturbation_pool(gender, config.gender_ambiguity_share) for gender in GENDERS
        }
        self.index = DedupIndex(index_path, config)

    def __enter__(self) -> Preparer:
        return self

    def __exit__(self, *_: object) -> None:
        self.index.__exit__()

    def outputs(self, candidates_path: Path, out_dir: Path) -> tuple[Path, Path]:
        stem = items_stem(candidates_path)
        return out_dir / f"{stem}.items.parquet", out_dir / f"{stem}.prepare.json"

    def prepare_file(self, candidates_path: Path, out_dir: Path) -> PrepareReport:
        """Items of one candidates file; a file already prepared with this config and code is skipped."""
        items_path, report_path = self.outputs(candidates_path, out_dir)
        if not candidates_path.is_file():
            raise UserError(f"candidates file not found: {candidates_path}")
        done = finished_marker(report_path, (items_path,), self.fingerprint, candidates_path)
        if done is not None:
            stats = PipelineStats.from_dict(done["stats"])
            return PrepareReport(candidates_path, items_path, report_path, True, done["items"], stats)
        started = time.perf_counter()
        stats = prepare_stats()
        metadata = {"knowref60k.fingerprint": self.fingerprint, "knowref60k.seed": str(self.config.seed)}
        try:
            with atomic_path(items_path) as items_tmp:
                writer = RowWriter(items_tmp, ITEM_SCHEMA, metadata)
                try:
                    for row in read_candidates(candidates_path):
                        item = self._item(row, stats)
                        if item is not None:
                            writer.write([item])
                finally:
                    writer.close()
                self.index.commit()
        except BaseException:
            self.index.rollback()
            raise
        seconds = time.perf_counter() - started
        write_json_atomic(
            report_path,
            {
                "source_file": candidates_path.name,
                "source": source_identity(candidates_path),
                "fingerprint": self.fingerprint,
                "config": self.config.to_dict(),
                "index": str(self.index_path),
                "items": writer.rows,
                "seconds": round(seconds, 3),
                "stats": stats.to_dict(),
            },
        )
        log.info("%s: %d items in %.1f s", candidates_path.name, writer.rows, seconds)
        return PrepareReport(candidates_path, items_path, report_path, False, writer.rows, stats, seconds)

    def _item(self, row: dict[str, Any], stats: PipelineStats) -> dict[str, Any] | None:
        dedup, perturbation = stats["dedup"], stats["perturb"]
        dedup.total += 1
        decision = self.index.decide(row)
        if not decision.is_kept:
            dedup.drop(f"{decision.kind}_duplicate")
            return None
        dedup.forwarded += 1
        perturbation.total += 1
        try:
            perturbed = perturb(row, self.pools, self.config.seed)
        except ValueError as error:
            log.warning("%s: %s", row["candidate_id"], error)
            perturbation.drop("no_distinct_names")
            return None
        perturbation.forwarded += 1
        return {**row, **perturbed.columns()}
