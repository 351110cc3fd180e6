"""The release as an lm-evaluation-harness task: `lm_eval/knowref60k.yaml` and `lm_eval/utils.py` (a copy
of `winogrande_form.py`), so that `lm_eval --include_path RELEASE/lm_eval --tasks knowref60k` scores the
release's Parquet as WinoGrande is scored (partial scoring, accuracy), with no other file."""

from __future__ import annotations

from pathlib import Path

from knowref60k.release import winogrande_form

TASK = "knowref60k"
TASK_YAML = f"""task: {TASK}
custom_dataset: !function utils.load_release_dataset
output_type: multiple_choice
training_split: train
validation_split: validation
test_split: test
fewshot_split: train
doc_to_text: !function utils.doc_to_text
doc_to_target: !function utils.doc_to_target
doc_to_choice: !function utils.doc_to_choice
should_decontaminate: true
doc_to_decontamination_query: sentence
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def write_task(release: Path) -> list[str]:
    """Write the task folder into a release (being built); the files' paths relative to it."""
    folder = release / "lm_eval"
    folder.mkdir()
    (folder / f"{TASK}.yaml").write_text(TASK_YAML, encoding="utf-8")
    (folder / "utils.py").write_bytes(Path(winogrande_form.__file__).read_bytes())
    return [f"lm_eval/{TASK}.yaml", "lm_eval/utils.py"]
