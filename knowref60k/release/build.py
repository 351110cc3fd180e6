"""Versioned dataset releases: agreement, thread-grouped splits, Parquet shards, a dataset card, a
funnel figure, a manifest and a JSONL export with KnowRef-60K's field names.

Releasing the same inputs twice gives byte-identical files: nothing in a release depends on the
clock (its date is the newest vote's), and an existing version is never overwritten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError
from knowref60k.core.io import (
    file_sha256,
    output_folder,
    read_report,
    read_rows,
    read_table,
    storage_errors,
)
from knowref60k.core.stats import PipelineStats, merge_stats, person_detection_of
from knowref60k.core.versioning import __version__, code_fingerprint
from knowref60k.labelling.decisions import CHOICES, KEPT, RESOLUTION
from knowref60k.labelling.quality import is_control
from knowref60k.overlap.audit import OverlapAudit, marked_release_row, overlap_summary
from knowref60k.overlap.figures import render_overlap_png
from knowref60k.release.agreement import RELEASE_NAMES, AgreementReport
from knowref60k.release.card import CardFacts, render_card, render_funnel_png
from knowref60k.release.config import ReleaseConfig
from knowref60k.release.cost import HeldBack, cost_facts
from knowref60k.release.difficulty import release_difficulty
from knowref60k.release.labelled import Labelled, label
from knowref60k.release.lm_eval_task import write_task
from knowref60k.release.schema import hf_features, release_schema
from knowref60k.release.splits import SPLITS, split_of

if TYPE_CHECKING:
    from knowref60k.debias.report import Analysis

log = logging.getLogger(__name__)

SHARD_ROWS = 100_000
# What has passed each early extraction stage, as the release funnel shows it.
FUNNEL_LABELS = {
    "read": "comments read",
    "clean": "comments after cleaning",
    "split": "sentences",
    "shape": "sentences of the right shape",
    "connective": "one connective",
}
ANNOTATOR_SALT = "knowref60k-annotator-v1"
# A version names its folder inside the releases folder: a plain name, so that it can neither point
# elsewhere ("../x", "/x", "a/b") nor hide (".x") nor be empty.
VERSION_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
# What agreement and the release rows read of a vote.
VOTE_COLUMNS = (
    "stage",
    "item_id",
    "annotation_id",
    "annotator_id",
    "choice",
    "created_at",
    "updated_at",
    "simulated",
)
# What a release reads of an item (`release_row`).
ITEM_COLUMNS = (
    "candidate_id",
    # The original antecedents' offsets: which gold sentences kept their judged pair of names.
    "antecedent1_start",
    "antecedent1_end",
    "antecedent2_start",
    "antecedent2_end",
    "perturbed_sentence",
    "name1",
    "name1_start",
    "name1_end",
    "name2",
    "name2_start",
    "name2_end",
    "pronoun",
    "perturbed_pronoun_start",
    "perturbed_pronoun_end",
    "comment_id",
    "link_id",
    "subreddit",
    "created_utc",
    "source_file",
)


def check_version(version: str) -> str:
    """The version, once it is a plain folder name; else a UserError."""
    if not VERSION_NAME.fullmatch(version):
        raise UserError(
            f"release version {version!r} is not a plain name: use letters, digits, '.', '_' and '-' "
            "(not starting with '.'), e.g. 2026.11 or v1.0.0"
        )
    return version


def opaque(annotator_id: Any) -> str:
    return "annotator-" + hashlib.sha256(f"{ANNOTATOR_SALT}\x1f{annotator_id}".encode()).hexdigest()[:10]


@dataclass
class ReleaseInputs:
    items: dict[str, dict[str, Any]]
    votes: list[dict[str, Any]]
    extraction: PipelineStats
    candidates: int
    unique_items: int
    sources: list[dict[str, Any]]
    perturbation_seed: str
    # How the candidates' two people were found ("score" by default): the funnel names it.
    person_detection: str
    # Votes left out, by reason (no annotator, unknown item, ...): counted, never silently dropped.
    rejected_votes: dict[str, int] = field(default_factory=dict)
    # The validity thresholds the items were prepared at, and the candidates held back below them.
    held_back: HeldBack = field(default_factory=HeldBack)


def read_inputs(run_dir: Path, votes_path: Path) -> ReleaseInputs:
    """Items, votes and the funnel's stats of one pipeline folder (candidates/, items/); a file among them
    that is damaged or not ours is a UserError naming it."""
    items_files = sorted((run_dir / "items").glob("*.items.parquet"))
    stats_files = sorted((run_dir / "candidates").glob("*.stats.json"))
    if not items_files or not stats_files:
        raise UserError(
            f"{run_dir}: no items/*.items.parquet or candidates/*.stats.json (run the pipeline first)"
        )
    if not votes_path.is_file():
        raise UserError(f"votes not found: {votes_path} (run `knowref60k annotate collect` first)")
    items, seeds = read_items(items_files)
    extracted = [extraction_report(path) for path in stats_files]
    # Read to refuse a damaged report; not summed: two items files may hold the same ids (a candidates
    # file prepared under two names), and the funnel counts each item once, by id.
    held_back = HeldBack()
    for path in sorted((run_dir / "items").glob("*.prepare.json")):
        prepared_items(path)
        held_back.add(read_report(path, "prepare report"))
    votes, rejected = read_votes(votes_path, items)
    return ReleaseInputs(
        items=items,
        votes=votes,
        extraction=merge_stats(stats_files),
        candidates=sum(report["candidates"] for report in extracted),
        unique_items=len(items),
        sources=[
            {"file": report["source_file"], "sha256": report.get("source_sha256"), "size": report["size"]}
            for report in extracted
        ],
        perturbation_seed=",".join(sorted(seeds)),
        person_detection=person_detection_of(stats_files),
        rejected_votes=rejected,
        held_back=held_back,
    )


def read_items(paths: list[Path]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Every item of the files by id, and the perturbation seeds they were made with. An id read twice
    (a candidates file prepared under two names) is one item, with a warning naming the files."""
    items: dict[str, dict[str, Any]] = {}
    seeds = set()
    repeated: Counter[str] = Counter()
    for path in paths:
        table = read_table(path, "items", ITEM_COLUMNS)
        seeds.add((table.schema.metadata or {}).get(b"knowref60k.seed", b"?").decode())
        for row in table.to_pylist():
            repeated[path.name] += row["candidate_id"] in items
            items[row["candidate_id"]] = row
    if repeated.total():
        log.warning(
            "items with the id of an item already read, each id released once: %s",
            ", ".join(f"{name} {count}" for name, count in repeated.items() if count),
        )
    return items, seeds


def extraction_report(path: Path) -> dict[str, Any]:
    """What the release reads of an extraction's stats report, its numbers checked: a UserError naming
    the file when one is missing or not a whole number."""
    report = read_report(path, "stats report", ("source_file", "source", "candidates"))
    size = report["source"].get("size") if isinstance(report["source"], dict) else None
    if type(size) is not int or type(report["candidates"]) is not int:
        raise UserError(f"{path}: not a stats report: 'candidates' or the source's 'size' is not a number")
    return {**report, "size": size}


def prepared_items(path: Path) -> int:
    """The number of items a prepare report counts; a UserError naming the file when it has none."""
    items = read_report(path, "prepare report", ("items",))["items"]
    if type(items) is not int:
        raise UserError(f"{path}: not a prepare report: 'items' is {items!r}, not a number")
    return items


def read_votes(path: Path, items: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The usable votes of a votes file and how many were left out, by reason; a file that is not
    Parquet or lacks a column is a UserError."""
    usable, rejected = [], Counter[str]()
    for number, vote in enumerate(read_rows(path, list(VOTE_COLUMNS), "votes"), 1):
        problem = _vote_problem(vote, items)
        if problem:
            rejected[problem] += 1
        else:
            usable.append((number, vote))
    refuse_repeats(path, usable)
    return [vote for _, vote in usable], dict(sorted(rejected.items()))


def refuse_repeats(path: Path, votes: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
    """A collect writes each (stage, item, annotator) and each annotation once: a file whose usable votes
    (each with its row number) repeat one holds two collects, or two servers' votes, whose counts would
    double or whose annotators would collide."""
    for key, what in (
        (("stage", "item_id", "annotator_id"), "a vote of the same annotator on the same item"),
        (("annotation_id",), "the same annotation"),
    ):
        seen: set[tuple[Any, ...]] = set()
        for number, row in votes:
            value = tuple(row[name] for name in key)
            if value in seen:
                shown = ", ".join(f"{name} {row[name]}" for name in key)
                raise UserError(
                    f"{path}: row {number} repeats {what} ({shown}): not one collect's votes "
                    "(two collects or two servers' votes in one file?); release from one `annotate collect`"
                )
            seen.add(value)


def _vote_problem(vote: Mapping[str, Any], items: Mapping[str, Any]) -> str | None:
    if vote["stage"] not in CHOICES:
        return "unknown_stage"
    if vote["choice"] not in CHOICES[vote["stage"]]:
        return "unknown_choice"
    if vote["annotator_id"] is None:
        return "no_annotator"
    if vote["created_at"] is None or vote["updated_at"] is None or vote["annotation_id"] is None:
        return "no_annotation_time_or_id"
    if vote["item_id"] not in items and not is_control(vote["item_id"]):
        return "unknown_item"
    return None


def release_row(item: Mapping[str, Any], labelled: Labelled) -> dict[str, Any]:
    item_id = item["candidate_id"]
    decision = labelled.report.decisions[item_id]
    screened = labelled.screening[item_id].votes if labelled.screening else ()
    return {
        "id": item["candidate_id"],
        "sentence": item["perturbed_sentence"],
        "name1": item["name1"],
        "name1_start": item["name1_start"],
        "name1_end": item["name1_end"],
        "name2": item["name2"],
        "name2_start": item["name2_start"],
        "name2_end": item["name2_end"],
        "pronoun": item["pronoun"],
        "pronoun_start": item["perturbed_pronoun_start"],
        "pronoun_end": item["perturbed_pronoun_end"],
        "label": 0 if decision.label == "antecedent1" else 1,
        "annotation_strength": decision.strength,
        "votes": [RELEASE_NAMES[v["choice"]] for v in decision.votes],
        "annotators": [opaque(v["annotator_id"]) for v in decision.votes],
        "late_votes": labelled.config.late_votes(RESOLUTION, decision),
        "label_posterior": labelled.label_model.posterior(item_id, decision.label or ""),
        "screeners": [opaque(v["annotator_id"]) for v in screened],
        "simulated_votes": sum(bool(v["simulated"]) for v in (*decision.votes, *screened)),
        "comment_id": item["comment_id"],
        "link_id": item["link_id"],
        "subreddit": item["subreddit"],
        "created_utc": item["created_utc"],
        "source_file": item["source_file"],
    }


@dataclass
class Release:
    version: str
    path: Path
    splits: dict[str, int]
    labelled: Labelled
    simulated: bool
    rejected_votes: dict[str, int] = field(default_factory=dict)

    @property
    def report(self) -> AgreementReport:
        return self.labelled.report


def build_release(
    run_dir: Path,
    votes_path: Path,
    version: str,
    releases_dir: Path,
    config: ReleaseConfig | None = None,
    audit: OverlapAudit | None = None,
) -> Release:
    """Write data/releases/<version>/; refuses to overwrite an existing version. With an overlap audit,
    every item gets the audit's columns and the card its report and figure."""
    config = config or ReleaseConfig()
    target = releases_dir / check_version(version)
    if target.exists():
        raise UserError(
            f"release {version} exists at {target}: releases are never overwritten, pick a new version"
        )
    output_folder(releases_dir)
    inputs = read_inputs(run_dir, votes_path)
    labelled = label(inputs.items, inputs.votes, config.labelling, opaque, config.control_answers())
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SPLITS}
    for item_id in sorted(inputs.items):
        if labelled.eligible(item_id) and labelled.report.decisions[item_id].status == KEPT:
            item = inputs.items[item_id]
            rows[split_of(item, config.proportions)].append(release_row(item, labelled))
    overlap = _audit(rows, audit) if audit else None
    debiased = _debias(rows, config.debias) if config.debias else None
    difficulty = release_difficulty(rows, inputs.items, config.model)
    staging = releases_dir / f".{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with storage_errors(target, "write the release"):
            (staging / "data").mkdir(parents=True)
            contents = _write_contents(staging, rows, inputs, labelled, overlap, debiased)
            contents = dataclasses.replace(contents, difficulty=difficulty)
            _write_card_and_manifest(staging, version, contents, inputs, labelled, config)
            os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    simulated = contents.simulated_votes > 0
    return Release(version, target, contents.counts, labelled, simulated, inputs.rejected_votes)


def _write_contents(
    staging: Path,
    rows: Mapping[str, list[dict[str, Any]]],
    inputs: ReleaseInputs,
    labelled: Labelled,
    overlap: dict[str, Any] | None,
    debiased: Analysis | None,
) -> CardFacts:
    """The splits (and the debiased config), the JSONL export and the figures."""
    files = _write_splits(staging, rows, audited=overlap is not None, debiased=debiased is not None)
    aflite = None
    if debiased:
        kept = {
            split: [row for row in split_rows if row["aflite_kept"]] for split, split_rows in rows.items()
        }
        files += _write_splits(staging, kept, overlap is not None, True, "data/debiased/")
        debiased.plot(staging / "aflite.png")
        files.append("aflite.png")
        aflite = {**debiased.report, "splits": {split: len(kept_rows) for split, kept_rows in kept.items()}}
    files += _write_jsonl(staging, rows)
    files += write_task(staging)
    funnel = funnel_counts(inputs, labelled)
    render_funnel_png(funnel, staging / "funnel.png")
    files += ["README.md", "funnel.png"]
    if overlap:
        curves = {name: group["curve"] for name, group in overlap["groups"].items() if group["items"]}
        render_overlap_png(curves, staging / "overlap.png", "Overlap of the release's items")
        files.append("overlap.png")
    counts = {name: len(split_rows) for name, split_rows in rows.items()}
    simulated = sum(bool(v["simulated"]) for v in inputs.votes)
    return CardFacts(
        files, counts, funnel, simulated, grouped_by(rows), inputs.person_detection, overlap, aflite
    )


def _write_card_and_manifest(
    staging: Path,
    version: str,
    contents: CardFacts,
    inputs: ReleaseInputs,
    labelled: Labelled,
    config: ReleaseConfig,
) -> None:
    sizes = {
        s: sum((staging / f).stat().st_size for f in contents.files if f.startswith(f"data/{s}-"))
        for s in SPLITS
    }
    contents = dataclasses.replace(contents, cost=cost_facts(labelled, config.cost, inputs.held_back))
    card = render_card(version, contents, sizes, labelled, config)
    (staging / "README.md").write_text(card, encoding="utf-8")
    manifest = _manifest(version, staging, contents, inputs, labelled, config)
    (staging / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")


def grouped_by(rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, int]:
    """How many released items were split by their thread, and how many by their own id (no link_id)."""
    kinds = Counter(
        "thread" if row.get("link_id") else "item" for split_rows in rows.values() for row in split_rows
    )
    return {"thread": kinds["thread"], "item": kinds["item"]}


def _audit(rows: Mapping[str, list[dict[str, Any]]], audit: OverlapAudit) -> dict[str, Any]:
    """Add the overlap columns to every row; the summary per split and over all items."""

    for split_rows in rows.values():
        columns = audit.columns([marked_release_row(row) for row in split_rows])
        for row, row_columns in zip(split_rows, columns, strict=True):
            row.update(row_columns)
    every = [row for split_rows in rows.values() for row in split_rows]
    return overlap_summary({**rows, "all": every}, audit)


def _debias(rows: Mapping[str, list[dict[str, Any]]], features: str) -> Analysis:
    """AFLite over every kept item (all splits together); its columns are added to every row."""
    from knowref60k.debias.problems import release_problem
    from knowref60k.debias.report import analyse, columns_of

    every = [row for split_rows in rows.values() for row in split_rows]
    analysis = analyse([release_problem(row) for row in every], {}, features)
    for row, columns in zip(every, columns_of(analysis.result), strict=True):
        row.update(columns)
    return analysis


def _write_splits(
    staging: Path,
    rows: Mapping[str, list[dict[str, Any]]],
    audited: bool,
    debiased: bool = False,
    prefix: str = "data/",
) -> list[str]:
    metadata = {b"huggingface": orjson.dumps({"info": {"features": hf_features(audited, debiased)}})}
    # Nullable as `datasets` builds its own schema: it takes the features (the ClassLabel of `label`) from
    # the metadata only for columns whose Arrow field, nullability included, equals its own.
    fields = release_schema(audited, debiased)
    schema = pa.schema([f.with_nullable(True) for f in fields]).with_metadata(metadata)
    (staging / prefix).mkdir(parents=True, exist_ok=True)
    files = []
    for split, split_rows in rows.items():
        # An empty split gets no file: readers such as `datasets` fail on a Parquet file of 0 rows.
        shards = -(-len(split_rows) // SHARD_ROWS)
        for shard in range(shards):
            name = f"{prefix}{split}-{shard:05d}-of-{shards:05d}.parquet"
            chunk = split_rows[shard * SHARD_ROWS : (shard + 1) * SHARD_ROWS]
            table = pa.Table.from_pylist(chunk, schema=schema)
            pq.write_table(table, staging / name, compression="zstd")
            files.append(name)
    return files


def _write_jsonl(staging: Path, rows: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """KnowRef-60K's field names, for loaders written for the original release."""
    (staging / "jsonl").mkdir()
    files = []
    for split, split_rows in rows.items():
        lines = []
        for row in split_rows:
            sentence, start, end = row["sentence"], row["pronoun_start"], row["pronoun_end"]
            names = (row["name1"], row["name2"])
            lines.append(
                orjson.dumps(
                    {
                        "id": row["id"],
                        "sentence_with_pronoun": f"{sentence[:start]}[{sentence[start:end]}]{sentence[end:]}",
                        "candidate0": names[0],
                        "candidate1": names[1],
                        "correct_candidate": names[row["label"]],
                        "annotation_strength": str(row["annotation_strength"]),
                    }
                )
            )
        name = f"jsonl/{split}.jsonl"
        (staging / name).write_bytes(b"".join(line + b"\n" for line in lines))
        files.append(name)
    return files


def funnel_counts(inputs: ReleaseInputs, labelled: Labelled) -> list[tuple[str, int]]:
    """(stage, count) from the dump's comments down to the kept items. The early extraction stages
    that `FUNNEL_LABELS` names, then the files' own counts of candidates and of items (those hold
    whichever stages the pipelines end with), then screening and resolution, named by their rules."""
    stages = inputs.extraction.stages
    report, config = labelled.report, labelled.config
    screening = labelled.screening_counts()
    careful = (
        [(f"of them carefully (validity score < {config.careful_level:g})", screening["screened_carefully"])]
        if config.careful_level
        else []
    )
    screened = (
        [
            ("screened (original sentence)", screening["items"] - screening["pending"]),
            *careful,
            ("screened valid", screening["screened_valid"]),
            (f"unscreened (validity score >= {config.skip_level:g})", screening["skipped_by_score"]),
        ]
        if config.screening
        else []
    )
    resolved = sum(count for status, count in report.status_counts.items() if status != "pending")
    rule = config.resolution_rule
    return [
        *((label, stages[name].forwarded if name in stages else 0) for name, label in FUNNEL_LABELS.items()),
        (
            f"two person antecedents (candidates; person detection: {inputs.person_detection})",
            inputs.candidates,
        ),
        ("unique items", inputs.unique_items),
        *screened,
        (f"resolved (up to {rule.votes_per_item} votes)", resolved),
        (f"kept (>= {rule.keep_at_least} of {rule.votes_per_item} agree)", report.status_counts.get(KEPT, 0)),
    ]


def _manifest(
    version: str,
    staging: Path,
    contents: CardFacts,
    inputs: ReleaseInputs,
    labelled: Labelled,
    config: ReleaseConfig,
) -> dict[str, Any]:
    newest_vote = max((v["updated_at"] for v in inputs.votes), default=None)
    manifest: dict[str, Any] = {}
    if contents.simulated_votes:
        manifest["warning"] = (
            f"SIMULATED VOTES: {contents.simulated_votes} votes came from simulated annotators"
        )
    entries = []
    for name in sorted(contents.files):
        path = staging / name
        entries.append({"path": name, "sha256": file_sha256(path), "rows": _row_count(path)})
    manifest.update(
        {
            "name": "knowref60k",
            "version": version,
            "created": newest_vote.isoformat() if newest_vote else None,
            "code_version": __version__,
            "code_fingerprint": code_fingerprint(__name__),
            "config": config.to_dict(),
            "seeds": {"perturbation": inputs.perturbation_seed, "split_salt": "knowref60k-split-v1"},
            "splits": dict(contents.counts),
            "funnel": dict(contents.funnel),
            "labelling": labelled.summary(),
            "cost": contents.cost,
            "agreement": labelled.report.summary(),
            "difficulty": contents.difficulty,
            "rejected_votes": inputs.rejected_votes,
            "files": entries,
            "sources": sorted(inputs.sources, key=lambda s: s["file"]),
        }
    )
    if contents.overlap:
        manifest["overlap"] = contents.overlap
    if contents.aflite:
        manifest["aflite"] = contents.aflite
    return manifest


def _row_count(path: Path) -> int | None:
    """Rows of a Parquet or JSONL file of the release; None for the card and the figure."""
    if path.suffix == ".parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    if path.suffix == ".jsonl":
        return path.read_bytes().count(b"\n")
    return None
