"""`knowref60k stats`: a release's summary, each file checked against its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from knowref60k.cli.common import console, fail, user_errors

VerifyOption = Annotated[
    bool, typer.Option("--verify", help="Also check every file's sha256 against the manifest (reads it all).")
]


def stats(
    path: Annotated[Path, typer.Argument(help="A release folder.")], verify: VerifyOption = False
) -> None:
    """Summarise a release: splits, agreement, files, each checked against the manifest (present, its
    rows; with --verify its sha256); a damaged release ends in one error line naming the files."""
    from knowref60k.release.load import check_files, damaged, manifest_files, read_manifest, unlisted_shards

    with user_errors():
        manifest = read_manifest(path)
        entries = manifest_files(manifest, path)
        checks = check_files(path, entries, verify) + unlisted_shards(path, entries)
    if "warning" in manifest:
        console.print(manifest["warning"], style="bold yellow")
    console.print(f"{manifest['name']} {manifest['version']} (created {manifest['created']})")
    console.print(f"splits: {manifest['splits']}")
    print_agreement(manifest["agreement"])
    for check in checks:
        rows = f"{check.rows:,} rows" if check.rows is not None else "not a table"
        state = f": DAMAGED, {check.problem}" if check.problem else ""
        console.print(f"  {check.path}: {rows}, sha256 {(check.sha256 or '?')[:16]}...{state}")
    problem = damaged(path, checks)
    if problem:
        raise fail(problem)
    checked = "rows and sha256" if verify else "rows; sha256 not checked (--verify)"
    console.print(f"files: {len(checks)} present, as the manifest says ({checked})")


def print_agreement(summary: dict[str, Any]) -> None:
    from knowref60k.release.agreement import alpha_text, kappa_text

    console.print(
        f"items: {summary['items']}; Krippendorff's alpha {alpha_text(summary.get('krippendorff_alpha'))} "
        f"(every vote); Fleiss' kappa {kappa_text(summary['fleiss_kappa'])} "
        f"({summary.get('fleiss_kappa_items', 0)} audit items); neither votes "
        f"{summary['neither_share']:.1%}; labels {summary['label_balance']}; flagged annotators "
        f"{len(summary['flagged_annotators'])} of {len(summary['annotators'])}"
    )
