"""Turn candidate files into annotation-ready items: de-duplicate across all dumps, then perturb names.

Adding a stage is one new module in `stages/` plus one line in `PIPELINE`: the stage's class and the
explicit arguments it is built with. Prepare takes its settings as concrete values (the validity
threshold a score, not a level still to choose): it loads no config file.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.config import PrepareConfig
from knowref60k.core.errors import StorageError, UserError
from knowref60k.core.io import (
    CANDIDATE_SCHEMA,
    ITEM_SCHEMA,
    atomic_path,
    distinct_files,
    output_clashes,
    read_rows,
    storage_errors,
)
from knowref60k.core.names import GENDERS, NAMES_DIR, NamePool, perturbation_pool
from knowref60k.core.runner import FileReport, FileRun, RowSink
from knowref60k.core.stage import (
    Stage,
    chain,
    collect_stats,
    empty_stats,
    quarantined_by,
    set_aside_by,
    stage_modules,
)
from knowref60k.core.stats import PipelineStats
from knowref60k.core.versioning import code_fingerprint, data_fingerprint
from knowref60k.prepare.dedup import SAME_ID, DedupIndex
from knowref60k.prepare.rows import Row
from knowref60k.prepare.stages.dedup import Deduplicate
from knowref60k.prepare.stages.mentions import UserMention
from knowref60k.prepare.stages.name_mentions import NameMention
from knowref60k.prepare.stages.perturb import Perturb
from knowref60k.prepare.stages.pronouns import OtherGenderPronoun
from knowref60k.prepare.stages.threshold import HELD_BACK_SUFFIX, ValidityThreshold
from knowref60k.prepare.stages.validate import Validate

log = logging.getLogger(__name__)

CANDIDATES_SUFFIX = ".candidates.parquet"


@dataclass(frozen=True)
class FileInputs:
    """The values the stages of one candidates file are built from, each handed to the stage that needs
    it as an explicit constructor argument (in `PIPELINE`)."""

    threshold: float
    seed: int
    index: DedupIndex
    pools: Mapping[str, NamePool]
    # The input being prepared (its items file's stem).
    input_name: str
    # Filled by de-duplication: candidates left out because their id was kept, by the input that kept it.
    same_id_origins: Counter[str]


StageSpec = tuple[type[Stage[Row, Row]], Callable[[FileInputs], Stage[Row, Row]]]

# The stages in order, one line each: the class, and how it is built.
PIPELINE: tuple[StageSpec, ...] = (
    (Validate, lambda _: Validate()),
    (UserMention, lambda _: UserMention()),
    (ValidityThreshold, lambda run: ValidityThreshold(run.threshold)),
    (NameMention, lambda _: NameMention()),
    (OtherGenderPronoun, lambda _: OtherGenderPronoun()),
    (Deduplicate, lambda run: Deduplicate(run.index, run.input_name, run.same_id_origins)),
    (Perturb, lambda run: Perturb(run.pools, run.seed)),
)
STAGES: tuple[type[Stage[Row, Row]], ...] = tuple(kind for kind, _ in PIPELINE)


def built_stages(inputs: FileInputs, skip: tuple[type[Stage[Row, Row]], ...] = ()) -> list[Stage[Row, Row]]:
    """The stages of `PIPELINE` built for one file, less those in `skip`."""
    return [build(inputs) for kind, build in PIPELINE if kind not in skip]


def prepare_stats() -> PipelineStats:
    return empty_stats(STAGES)


def items_stem(candidates_path: Path) -> str:
    name = candidates_path.name
    return name[: -len(CANDIDATES_SUFFIX)] if name.endswith(CANDIDATES_SUFFIX) else candidates_path.stem


def candidate_files(paths: Iterable[Path]) -> list[Path]:
    """The candidates files to prepare: a file given twice (or by two spellings) once, since preparing it
    again would count its items twice; different files that would write the same items file (a/RC_x and
    b/RC_x) are refused, since the second would replace the first's items."""
    files = distinct_files(paths)
    listed = output_clashes(files, items_stem)
    if listed:
        raise UserError(
            f"candidates files would write the same items files ({listed}); rename one, or prepare them "
            "into different --out folders"
        )
    return files


def read_candidates(path: Path) -> Iterator[dict[str, Any]]:
    return read_rows(path, CANDIDATE_SCHEMA.names, "candidates")


def set_aside_path(candidates_path: Path, out_dir: Path) -> Path:
    return out_dir / f"{items_stem(candidates_path)}{HELD_BACK_SUFFIX}"


def write_set_aside(path: Path, rows: list[dict[str, Any]]) -> None:
    """The candidates set aside by score, as a candidates file (an empty one when there are none)."""
    table = pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA)
    with atomic_path(path) as temporary, storage_errors(path):
        pq.write_table(table, temporary, compression="zstd")


def prepare_fingerprint(config: PrepareConfig) -> str:
    """What prepare's outputs depend on: the settings (the validity threshold as applied), the code of the
    stages and all they import, and the name lists."""
    code = code_fingerprint(__name__, *stage_modules(STAGES))
    # The threshold again at the end: fingerprints of earlier runs are spelt so, and a changed one would
    # redo every finished file.
    return f"{config.fingerprint()}-{code}-{data_fingerprint(NAMES_DIR)}-{config.validity_threshold}"


class Preparer:
    """De-duplication against a persistent index, then perturbation (use as a context manager)."""

    def __init__(self, config: PrepareConfig, index_path: Path) -> None:
        """`config`: concrete settings, as a command's RunConfig resolved them (the threshold a score)."""
        self.config = config
        self.index_path = index_path
        self.fingerprint = prepare_fingerprint(config)
        self.pools = {gender: perturbation_pool(gender, config.gender_ambiguity_share) for gender in GENDERS}
        self.index = DedupIndex(index_path, config)

    def __enter__(self) -> Preparer:
        return self

    def __exit__(self, *_: object) -> None:
        self.index.__exit__()

    def file_run(self, candidates_path: Path, out_dir: Path) -> FileRun:
        stem = items_stem(candidates_path)
        return FileRun(
            candidates_path,
            out_dir / f"{stem}.items.parquet",
            out_dir / f"{stem}.prepare.json",
            self.fingerprint,
            "items",
            out_dir / f"{stem}.invalid-candidates.jsonl",
            lock_path=out_dir / f".{stem}.lock",
            extra_outputs=[set_aside_path(candidates_path, out_dir)],
        )

    def prepare_file(self, candidates_path: Path, out_dir: Path) -> FileReport:
        """Items of one candidates file; a file already prepared with this config and code is skipped.
        Another run writing the same outputs now is an OutputsBusy error, raised before any work."""
        if not candidates_path.is_file():
            raise UserError(f"candidates file not found: {candidates_path}")
        run = self.file_run(candidates_path, out_dir)
        with run.claimed():
            finished = run.finished()
            if finished is not None:
                return finished
            sink, origins = self._prepare(run, out_dir)
            fields = {
                "config": self.config.to_dict(),
                "index": str(self.index_path),
                "same_id_duplicates": origins,
            }
            report = run.finish(sink, fields)
        log.info("%s: %d items in %.1f s", candidates_path.name, report.rows, report.seconds)
        return report

    def _prepare(self, run: FileRun, out_dir: Path) -> tuple[RowSink, dict[str, int]]:
        """The items of `run.source` written, and the index's decisions committed with them; the ids left
        out because another input had kept them, by that input."""
        metadata = {"knowref60k.fingerprint": self.fingerprint, "knowref60k.seed": str(self.config.seed)}
        inputs = self.file_inputs(items_stem(run.source))
        stages = built_stages(inputs)
        try:
            with run.writing(ITEM_SCHEMA, metadata, prepare_stats()) as sink:
                for item in chain(stages, read_candidates(run.source)):
                    sink.write([item])
                sink.write([], quarantined_by(stages))
                collect_stats(stages, sink.stats)
                write_set_aside(set_aside_path(run.source, out_dir), set_aside_by(stages))
            self.index.commit()
        except sqlite3.OperationalError as error:  # a full disk, a database locked by another run
            self.index.rollback()
            raise StorageError(f"cannot write the de-duplication index {self.index_path}: {error}") from None
        except BaseException:
            self.index.rollback()
            raise
        return sink, same_id_origins(run.source, inputs.same_id_origins)

    def file_inputs(self, input_name: str) -> FileInputs:
        """What the stages of the input `input_name` are built from."""
        config = self.config
        return FileInputs(
            config.validity_threshold, config.seed, self.index, self.pools, input_name, Counter()
        )


def same_id_origins(candidates_path: Path, counted: Counter[str]) -> dict[str, int]:
    """Candidates left out because their very id was already kept, by the input that kept it; each such
    input is also logged, since a copy of a candidates file under another name is likely a mistake."""
    origins = dict(sorted(counted.items()))
    for origin, count in origins.items():
        log.warning(
            "%s: %d candidates have the id of an item already kept from %s: left out as %s_duplicate",
            candidates_path.name,
            count,
            "this file earlier in the run" if origin == items_stem(candidates_path) else origin,
            SAME_ID,
        )
    return origins
