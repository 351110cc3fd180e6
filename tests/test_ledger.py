import os
from pathlib import Path

from knowref60k.ingest.ledger import Ledger


def test_ledger_processes_once_per_config_again_on_change_and_retries_failures(tmp_path: Path) -> None:
    first, second = tmp_path / "RC_2099-01.zst", tmp_path / "RC_2099-02.zst"
    first.write_bytes(b"january")
    second.write_bytes(b"february")
    ledger = Ledger(tmp_path / "ledger.sqlite")
    todo = ledger.pending([second, first], "cfg-a")
    assert [d.path.name for d in todo] == ["RC_2099-01.zst", "RC_2099-02.zst"]
    ledger.start(todo[0], "cfg-a")
    ledger.finish(todo[0], "cfg-a")
    ledger.start(todo[1], "cfg-a")
    ledger.finish(todo[1], "cfg-a", error="RuntimeError: boom")
    assert [d.path.name for d in ledger.pending([first, second], "cfg-a")] == [
        "RC_2099-02.zst"
    ]  # failed: retried
    assert len(ledger.pending([first, second], "cfg-b")) == 2  # another config: everything again
    first.write_bytes(b"january, re-issued")
    os.utime(first, ns=(1, 1))
    assert [d.path.name for d in ledger.pending([first], "cfg-a")] == ["RC_2099-01.zst"]  # changed file
    outcomes = {(e["file"], e["outcome"]) for e in ledger.entries()}
    assert outcomes == {("RC_2099-01.zst", "done"), ("RC_2099-02.zst", "failed")}
    assert next(e for e in ledger.entries() if e["outcome"] == "failed")["error"] == "RuntimeError: boom"
