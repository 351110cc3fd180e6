"""The shape of the library: phases as packages whose imports point down, the stage protocol, the code
fingerprint taken from where the stages live, and a `load_release` that stays light."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from knowref60k.core.stage import Stage, collect_stats, empty_stats
from knowref60k.core.stats import PipelineStats
from knowref60k.core.versioning import PACKAGE_DIR, code_fingerprint
from knowref60k.extract.context import ExtractStage
from knowref60k.release.build import build_release
from tests.conftest import REPO
from tests.test_release import synthetic_run

# The phases from the bottom up: a module may import its own phase or one below, never one above.
PHASES = (
    "core",
    "ingest",
    "extract",
    "prepare",
    "overlap",
    "debias",
    "labelling",
    "quality",
    "release",
    "evaluate",
    "settings",
    "cli",
)
HEAVY_MODULES = (
    "spacy",
    "prefect",
    "thinc",
    "dask",
    "matplotlib",
    "scipy",
    "tokenizers",
    "torch",
    "transformers",
    "lm_eval",
)


def package_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(path: Path, known: Iterable[str], importer: str = "") -> set[str]:
    """The project modules a file imports, at any depth (inside functions and TYPE_CHECKING too); a
    relative import is resolved against `importer`, the importing module's name."""
    known = set(known)
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node, importer, path.name == "__init__.py")
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found |= {name for name in names if name in known}
    return found


def absolute_module(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def phase_of(module: str) -> int:
    parts = module.split(".")
    # The package itself and its `python -m` entry point are on top.
    return PHASES.index(parts[1]) if len(parts) > 1 and parts[1] != "__main__" else len(PHASES)


def test_every_module_lives_in_a_phase_package() -> None:
    loose = [
        m for m in package_modules() if m.count(".") == 1 and m.split(".")[1] not in (*PHASES, "__main__")
    ]
    assert loose == []


def test_imports_point_down_or_sideways_never_up() -> None:
    modules = package_modules()
    upward = [
        f"{module} -> {imported}"
        for module, path in modules.items()
        for imported in imports_of(path, modules)
        if phase_of(imported) > phase_of(module)
    ]
    assert upward == []


def test_no_module_imports_itself_through_a_circle() -> None:
    modules = package_modules()
    graph = {module: imports_of(path, modules, module) - {module} for module, path in modules.items()}
    assert cycles_in(graph) == []


def cycles_in(graph: dict[str, set[str]]) -> list[str]:
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    return cycles


def test_the_library_imports_neither_prefect_nor_the_flows() -> None:
    for module, path in package_modules().items():
        text = path.read_text(encoding="utf-8")
        assert "import prefect" not in text and "from prefect" not in text, module


# ---- the project's three packages of code, and its data ----

# From the bottom up: the library, the Label Studio side, the Prefect flows, each installed under the
# project's name from the folder the layout puts it in.
LAYERS = {"knowref60k": "knowref60k", "knowref60k_annotation": "annotation", "knowref60k_flows": "flows"}
# The project's data, installed beside the code and read through importlib.resources: no code in it.
DATA_PACKAGE = {"knowref60k_data": "data"}
# Loaded by Label Studio's own process from its path (a Django application): no module of ours.
NOT_A_PACKAGE = "labelstudio_app"


def project_modules() -> dict[str, Path]:
    modules = {}
    for name, folder in LAYERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[0] != NOT_A_PACKAGE:
                modules[".".join([name, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return modules


def project_imports() -> dict[str, set[str]]:
    modules = project_modules()
    return {module: imports_of(path, modules, module) - {module} for module, path in modules.items()}


def layer_of(module: str) -> int:
    return list(LAYERS).index(module.split(".")[0])


def test_the_library_the_label_studio_side_and_the_flows_import_only_downwards() -> None:
    graph = project_imports()
    upward = [f"{m} -> {i}" for m, imported in graph.items() for i in imported if layer_of(i) > layer_of(m)]
    assert upward == []
    assert sum(1 for m, imported in graph.items() if m.startswith("knowref60k_flows") and imported) > 5


def test_no_circle_among_the_projects_modules() -> None:
    graph = project_imports()
    assert cycles_in(graph) == []


def test_only_the_flows_import_prefect() -> None:
    importing = [
        module
        for module, path in project_modules().items()
        if any(line.lstrip().startswith(("import prefect", "from prefect")) for line in path.open())
    ]
    assert importing and all(module.startswith("knowref60k_flows.") for module in importing)


def test_no_code_imports_the_folders_by_their_generic_names() -> None:
    """`annotation` and `flows` are folders, not modules: importing them by those names would load a
    second copy of a module beside the installed one."""
    generic = {"annotation", *(f"annotation.{p.stem}" for p in (REPO / "annotation").glob("*.py"))}
    generic |= {"flows", *(f"flows.{p.stem}" for p in (REPO / "flows").glob("*.py"))}
    folders = ("knowref60k", "annotation", "flows", "tests", "benchmarks", "tools", "data")
    offenders = [
        f"{path.relative_to(REPO)}: {name}"
        for folder in folders
        for path in sorted((REPO / folder).rglob("*.py"))
        for name in imports_of(path, generic, "")
    ]
    assert offenders == []


def test_installing_the_project_adds_only_names_of_its_own() -> None:
    """Every installed top-level module is named for the project, and every folder of Python modules
    is installed, the data with them."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    installed = set(setuptools["packages"])
    assert {name.split(".")[0] for name in installed} == set(LAYERS) | set(DATA_PACKAGE)
    assert setuptools["package-dir"] == {
        name: folder for name, folder in {**LAYERS, **DATA_PACKAGE}.items() if name != folder
    }
    packages = {module for module, path in project_modules().items() if path.name == "__init__.py"}
    assert packages | set(DATA_PACKAGE) == installed


def test_data_holds_data_sources_and_manifests_only() -> None:
    """The scripts that rebuild data live in tools/, each folder named for the data folder it writes."""
    code = [
        str(path.relative_to(REPO))
        for path in (REPO / "data").rglob("*")
        if path.suffix in (".py", ".toml") and path != REPO / "data" / "__init__.py"
    ]
    assert code == []
    assert ast.get_docstring(ast.parse((REPO / "data" / "__init__.py").read_text())) is not None
    assert len(ast.parse((REPO / "data" / "__init__.py").read_text()).body) == 1  # the docstring alone
    rebuilding = {p.name for p in (REPO / "tools").iterdir() if p.is_dir() and p.name != "locks"}
    assert rebuilding and rebuilding <= {p.name for p in (REPO / "data").iterdir() if p.is_dir()}


def test_the_command_line_adds_the_other_parts_commands_through_entry_points() -> None:
    from importlib.metadata import entry_points

    from knowref60k.cli.app import COMMAND_GROUP, app

    plugged = {entry.value.split(":")[0] for entry in entry_points(group=COMMAND_GROUP)}
    assert plugged == {"knowref60k_annotation.cli", "knowref60k_flows.cli"}
    names = {info.name for info in app.registered_groups} | {info.name for info in app.registered_commands}
    assert {"annotate", "labelstudio", "run", "demo", "serve", "flow"} <= names


# ---- the stage protocol ----


class NoVowels(Stage[str, str]):
    name = "no_vowels"
    unit = "words"

    def reject(self, item: str) -> str | None:
        return "has_a_vowel" if set(item) & set("aeiou") else None


class Letters(Stage[str, str]):
    """An expanding stage: each word becomes its letters."""

    name = "letters"
    unit = "words -> letters"

    def run(self, items: Iterable[str]) -> Iterator[str]:
        for word in items:
            if self.count(None if word else "empty"):
                yield from word


def test_a_filter_stage_counts_in_out_and_each_reason() -> None:
    stage = NoVowels()
    assert list(stage.run(["sky", "tree", "myth", "oak"])) == ["sky", "myth"]
    assert stage.stats.to_dict() == {"unit": "words", "in": 4, "out": 2, "dropped": {"has_a_vowel": 2}}


def test_stats_and_their_order_come_from_the_stage_list() -> None:
    stages: list[Stage[Any, Any]] = [Letters(), NoVowels()]
    items: Iterable[Any] = ["hi", "", "yo"]
    for stage in stages:
        items = stage.run(items)
    assert list(items) == ["h", "y"]
    stats = collect_stats(stages, PipelineStats()).to_dict()["stages"]
    assert list(stats) == ["letters", "no_vowels"]
    assert stats["letters"] == {"unit": "words -> letters", "in": 3, "out": 2, "dropped": {"empty": 1}}
    assert stats["no_vowels"] == {"unit": "words", "in": 4, "out": 2, "dropped": {"has_a_vowel": 2}}
    assert list(empty_stats([Letters, NoVowels]).stages) == ["letters", "no_vowels"]


def test_the_extraction_funnel_is_the_stage_list() -> None:
    from knowref60k.extract.pipeline import STAGES

    names = [stage.name for stage in STAGES]
    assert names == [
        "read",
        "triage",
        "screen",
        "clean",
        "prefilter",
        "surface",
        "split",
        "shape",
        "connective",
        "antecedent",
        "language",
        "validity",
    ]
    assert len(set(names)) == len(names)
    assert all(stage.unit for stage in STAGES)


def test_extraction_and_prepare_stages_have_names_of_their_own() -> None:
    """The pipeline's funnel merges both phases' counters by stage name: a shared name would add up two
    stages' counts in one row."""
    from knowref60k.extract.pipeline import STAGES as EXTRACT_STAGES
    from knowref60k.prepare.preparer import STAGES as PREPARE_STAGES

    prepare = [stage.name for stage in PREPARE_STAGES]
    assert len(set(prepare)) == len(prepare)
    assert not {stage.name for stage in EXTRACT_STAGES} & set(prepare)


# ---- the code fingerprint follows the stages' modules ----


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "knowref60k"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_changing_a_stage_changes_the_extraction_fingerprint_and_the_cli_does_not(package_copy: Path) -> None:
    from knowref60k.core.stage import stage_modules
    from knowref60k.extract import extractor
    from knowref60k.extract.pipeline import STAGES

    modules = (extractor.__name__, *stage_modules(STAGES))
    before = code_fingerprint(*modules, root=package_copy)
    assert before == code_fingerprint(*modules)  # the copy is the package
    with (package_copy / "cli" / "app.py").open("a") as cli:
        cli.write("# a change outside extraction\n")
    assert code_fingerprint(*modules, root=package_copy) == before
    with (package_copy / "extract" / "stages" / "shape.py").open("a") as stage:
        stage.write("# a change to a stage\n")
    assert code_fingerprint(*modules, root=package_copy) != before


def test_changing_a_prepare_stage_changes_the_prepare_fingerprint(package_copy: Path) -> None:
    from knowref60k.core.stage import stage_modules
    from knowref60k.prepare import preparer

    modules = (preparer.__name__, *stage_modules(preparer.STAGES))
    before = code_fingerprint(*modules, root=package_copy)
    with (package_copy / "extract" / "stages" / "shape.py").open("a") as stage:
        stage.write("# extraction is not prepare's business\n")
    assert code_fingerprint(*modules, root=package_copy) == before
    with (package_copy / "prepare" / "stages" / "dedup.py").open("a") as stage:
        stage.write("# a change to a stage\n")
    assert code_fingerprint(*modules, root=package_copy) != before


# ---- the researcher's one line ----


def test_load_release_imports_nothing_heavy(tmp_path: Path) -> None:
    """Loading a release stays light: no model, workflow, plotting or numeric stack is imported (what it
    costs in seconds is not asserted here: timings belong to benchmarks)."""
    run = synthetic_run(tmp_path / "run", {f"t3_{n}": 2 for n in range(30)})
    release = build_release(run, run / "votes.parquet", "v1", tmp_path / "releases").path
    probe = (
        "import json, sys\n"
        "import knowref60k\n"
        f"tables = [knowref60k.load_release({str(release)!r}, s) for s in ('train', 'validation', 'test')]\n"
        "heavy = sorted(m for m in HEAVY if m in sys.modules)\n"
        "print(json.dumps([sum(t.num_rows for t in tables), heavy]))\n"
    ).replace("HEAVY", repr(HEAVY_MODULES))
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    rows, heavy = json.loads(result.stdout)
    assert rows == 60
    assert heavy == []


# ---- a relaunch redoes what a changed stage list would make differently ----


class DropsEverySentence(ExtractStage[Any, Any]):
    name = "drop_all"
    unit = "sentences"

    def reject(self, item: Any) -> str | None:
        return "dropped_by_the_test"


@pytest.mark.integration
def test_a_new_stage_invalidates_the_finished_marker(tmp_path: Path) -> None:
    from knowref60k.core.config import ExtractConfig
    from knowref60k.extract.extractor import Extractor
    from knowref60k.extract.pipeline import STAGES
    from tests.test_release import SENTENCES

    dump = tmp_path / "RC_2099-01.txt"
    dump.write_text("".join(f"{sentence}\n" for sentence in SENTENCES), encoding="utf-8")
    with Extractor(ExtractConfig(), workers=1) as extractor:
        first = extractor.extract_file(dump, tmp_path / "out")
        again = extractor.extract_file(dump, tmp_path / "out")
    assert (first.skipped, again.skipped, first.rows) == (False, True, len(SENTENCES))
    with Extractor(ExtractConfig(), workers=1, stages=(*STAGES, DropsEverySentence)) as changed:
        redone = changed.extract_file(dump, tmp_path / "out")
    assert not redone.skipped and redone.rows == 0
    assert redone.stats["drop_all"].dropped == {"dropped_by_the_test": len(SENTENCES)}


def modules_loaded_by_the_pipeline(*packages: str) -> list[str]:
    """Which of `packages` (or their submodules) the command line, an extraction worker, preparation and
    the pipeline flow load, in a fresh interpreter."""
    return [m for m in pipeline_modules() if any(m == p or m.startswith(p + ".") for p in packages)]


@lru_cache(maxsize=1)
def pipeline_modules() -> tuple[str, ...]:
    script = (
        "import sys, json\n"
        "import knowref60k.cli.app, knowref60k.extract.extractor, knowref60k.prepare.preparer\n"
        "import knowref60k_flows.pipeline\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    return tuple(json.loads(result.stdout))


def test_extraction_and_preparation_never_import_the_eval_extra() -> None:
    """torch, transformers and lm-eval are an optional extra: the pipeline runs without them."""
    assert modules_loaded_by_the_pipeline("torch", "transformers", "lm_eval") == []


def test_the_extraction_path_never_loads_the_quality_package() -> None:
    """The gold set, its evaluation and the score's training live in `quality/`: an extraction worker and
    the pipeline flow load none of it."""
    assert modules_loaded_by_the_pipeline("knowref60k.quality") == []
