"""One input file to one Parquet file (and a quarantine file) plus a report that marks it finished.

Extraction and prepare share this: the outputs appear atomically, and the report, written last, names
the fingerprint of the config and code that made them, so a relaunch skips exactly the files finished
by the same config and code and redoes the rest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from knowref60k.core.errors import UserError
from knowref60k.core.io import (
    QuarantineWriter,
    RowWriter,
    atomic_path,
    finished_marker,
    output_digests,
    read_report,
    source_identity,
    storage_errors,
    write_json_atomic,
)
from knowref60k.core.locks import exclusive_lock
from knowref60k.core.records import QuarantinedLine
from knowref60k.core.stats import PipelineStats

log = logging.getLogger(__name__)


@dataclass
class FileReport:
    """What running one file did, or that it was skipped as already done."""

    source: Path
    rows_path: Path
    report_path: Path
    quarantine_path: Path | None
    skipped: bool
    rows: int
    stats: PipelineStats
    seconds: float = 0.0


@dataclass
class RowSink:
    """Where a running file's rows, quarantined lines and counters go."""

    writer: RowWriter
    quarantine: QuarantineWriter | None
    stats: PipelineStats
    started: float = field(default_factory=time.perf_counter)

    def write(self, rows: list[dict[str, Any]], quarantined: Sequence[QuarantinedLine] = ()) -> None:
        self.writer.write(rows)
        if self.quarantine is not None:
            self.quarantine.write(quarantined)
        elif quarantined:
            raise ValueError(f"{self.writer.target}: quarantined lines but no quarantine file")

    def close(self) -> None:
        self.writer.close()
        if self.quarantine is not None:
            self.quarantine.close()

    def abandon(self) -> None:
        """Close both files after a failure without raising again: the first error is the one to tell."""
        self.writer.abandon()
        if self.quarantine is not None:
            self.quarantine.abandon()


class SourceChanged(UserError):
    """The input changed while it was read: its outputs describe a file that no longer exists."""


class FileRun:
    """The outputs of one input file and the fingerprint they must carry to count as finished."""

    def __init__(
        self,
        source: Path,
        rows_path: Path,
        report_path: Path,
        fingerprint: str,
        count_name: str,
        quarantine_path: Path | None = None,
        lock_path: Path | None = None,
        extra_outputs: Sequence[Path] = (),
    ) -> None:
        self.source = source
        self.rows_path = rows_path
        self.report_path = report_path
        self.quarantine_path = quarantine_path
        self.fingerprint = fingerprint
        self.count_name = count_name  # what the report calls its rows: "candidates", "items"
        self.lock_path = lock_path or report_path.with_name(f".{report_path.name}.lock")
        self.read_identity: dict[str, int] | None = None  # the source as `writing` read it
        # Every file the run writes, each vouched for by its size and sha256 in the report.
        self.outputs = [path for path in (rows_path, quarantine_path, *extra_outputs) if path is not None]

    @contextmanager
    def claimed(self) -> Iterator[None]:
        """The outputs held against every other run, from the "already finished?" check to the written
        report: two runs into one folder would write the same `.partial` files and leave one run's rows
        beside the other's report. A second run fails at once (OutputsBusy), naming the first's pid;
        so does a run of another file whose outputs would replace this one's finished outputs."""
        with storage_errors(self.lock_path.parent, "create the folder"):
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.lock_path, f"{self.rows_path} (with its report)"):
            self._refuse_another_sources_outputs()
            yield

    def _refuse_another_sources_outputs(self) -> None:
        """A UserError when the outputs are the finished outputs of another file of the same name
        (`a/RC_x.ndjson` done, now `b/RC_x.ndjson` into the same folder), which this run would replace
        without a word. The same file moved elsewhere (same size and modification time, its recorded
        path gone) is the same source; a report without the path (an older run) is trusted as before."""
        if not self.report_path.exists():
            return
        try:
            report = read_report(self.report_path, "completion marker")
        except UserError:
            return  # not a whole report: `finished` says so, and the file is done again
        recorded, here = report.get("source_path"), str(self.source.resolve())
        if not isinstance(recorded, str) or recorded == here:
            return
        moved = not Path(recorded).exists() and report.get("source") == source_identity(self.source)
        if not moved:
            raise UserError(
                f"{self.rows_path} holds the finished outputs of {recorded}, a different file from {here}: "
                f"refusing to replace them; write into another folder, or delete {self.report_path} to "
                "let them be replaced"
            )

    def finished(self) -> FileReport | None:
        """The report of an earlier run with the same fingerprint and an unchanged source, if any."""
        done = finished_marker(self.report_path, self.outputs, self.fingerprint, self.source)
        if done is None:
            return None
        try:
            return self._report(True, int(done[self.count_name]), PipelineStats.from_dict(done["stats"]))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            log.warning("%s: not a whole report (%r); its file is done again", self.report_path, error)
            return None

    @contextmanager
    def writing(self, schema: pa.Schema, metadata: dict[str, str], stats: PipelineStats) -> Iterator[RowSink]:
        """A sink for the rows; the outputs replace earlier ones only if the block finishes. After a failure
        (a full disk, say) the earlier outputs stay as they were, no partial file is left, and the error
        raised is the first one, not one from cleaning up after it. A source whose size or modification
        time differs at the end of the block from its start is a SourceChanged error, and nothing is
        replaced: what the block records about the source (a sha256) must be taken inside it."""
        before = source_identity(self.source)  # taken before a byte is read: what the report records
        with ExitStack() as stack:
            rows_tmp = stack.enter_context(atomic_path(self.rows_path))
            quarantine = None
            if self.quarantine_path is not None:
                quarantine_tmp = stack.enter_context(atomic_path(self.quarantine_path))
                quarantine = QuarantineWriter(quarantine_tmp, self.source.name, self.quarantine_path)
            try:
                sink = RowSink(RowWriter(rows_tmp, schema, metadata, self.rows_path), quarantine, stats)
            except BaseException:
                if quarantine is not None:
                    quarantine.abandon()
                raise
            try:
                yield sink
                self._check_unchanged(before)
                sink.close()
            except BaseException:
                sink.abandon()
                raise
        self.read_identity = before

    def _check_unchanged(self, before: dict[str, int]) -> None:
        """A source that grew or changed while it was read (a dump still being downloaded or copied)
        is refused before its outputs replace anything: a report would call it done without its new
        lines, and record the size of bytes that were never read."""
        try:
            after: dict[str, int] | None = source_identity(self.source)
        except FileNotFoundError:
            after = None
        if after == before:
            return
        if after is None:
            change = "removed"
        elif after["size"] != before["size"]:
            change = f"{before['size']:,} bytes when its reading began, {after['size']:,} bytes now"
        else:
            change = "rewritten: same size, another modification time"
        raise SourceChanged(
            f"{self.source} changed while it was read ({change}); not marked done: run again once the "
            "file is complete"
        )

    def finish(self, sink: RowSink, fields: dict[str, Any]) -> FileReport:
        """Write the report that marks the file finished; `fields` adds what this kind of run records."""
        seconds = time.perf_counter() - sink.started
        report = {
            "source_file": self.source.name,
            "source": self.read_identity,
            "source_path": str(self.source.resolve()),  # whose outputs these are (see `claimed`)
            "fingerprint": self.fingerprint,
            self.count_name: sink.writer.rows,
            "seconds": round(seconds, 3),
            "stats": sink.stats.to_dict(),
            **fields,
            "outputs": output_digests(self.outputs),  # checked before a rerun skips the file
        }
        write_json_atomic(self.report_path, report)
        return self._report(False, sink.writer.rows, sink.stats, seconds)

    def _report(self, skipped: bool, rows: int, stats: PipelineStats, seconds: float = 0.0) -> FileReport:
        return FileReport(
            self.source, self.rows_path, self.report_path, self.quarantine_path, skipped, rows, stats, seconds
        )
