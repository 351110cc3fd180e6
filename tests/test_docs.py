"""The docs cannot rot: every command of a `bash` block in README.md and docs/*.md is run here in the
form that cannot change anything (`make -n TARGET`, `COMMAND --help`), and each option the line uses
must be one the command's own help lists; every `python` block compiles and calls only what the
package exports, with parameters it takes."""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

import knowref60k
from knowref60k.cli.app import app
from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
# Languages of blocks that are not commands: directory trees, figures, printed output.
NOT_COMMANDS = {"text", "python"}


def blocks(language: str) -> list[tuple[str, str]]:
    return [
        (path.name, match.group(2))
        for path in DOCS
        for match in BLOCK.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) == language
    ]


def command_lines() -> list[tuple[str, list[str]]]:
    """(file, words) of every command line of a bash block: comments, environment assignments and
    optional-argument brackets removed."""
    found = []
    for name, text in blocks("bash"):
        for line in text.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if not line or line.startswith("#"):
                continue
            words = [w for w in shlex.split(line.replace("[", " ").replace("]", " ")) if w]
            while words and re.fullmatch(r"[A-Z_0-9]+=\S*", words[0]):
                words.pop(0)
            found.append((name, words))
    return found


def options(words: list[str]) -> set[str]:
    return {word.split("=")[0] for word in words if word.startswith("--")}


def lists(help_text: str, option: str) -> bool:
    """Whether a help text lists the option itself (not only a longer one that starts the same)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text) is not None


@cache
def cli_help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, (path, result.output)
    return result.output


def cli_path(arguments: list[str]) -> tuple[str, ...]:
    """The command and sub-command named by the leading words, as far as the command line has them."""
    path: list[str] = []
    for word in arguments:
        if word.startswith("-") or "Commands" not in cli_help(tuple(path)):
            break
        listed = re.findall(r"^\s*│?\s*([a-z][a-z0-9-]*)\s", cli_help(tuple(path)).split("Commands")[1], re.M)
        assert word in listed, f"no command {' '.join([*path, word])!r}"
        path.append(word)
    return tuple(path)


def check_knowref60k(arguments: list[str]) -> None:
    path = cli_path(arguments)
    text = cli_help(path)
    for option in options(arguments):
        assert lists(text, option), f"`knowref60k {' '.join(path)}` has no option {option}"


@cache
def script_help(python: str, *command: str) -> str:
    result = subprocess.run(
        [python, *command, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, (command, result.stderr[-2000:])
    return result.stdout


def check_python(program: str, arguments: list[str]) -> None:
    """A module or script of the repository, or (in the model-evaluation environment) a tool installed
    there, such as lm_eval."""
    python = str(REPO / program) if program.startswith(".venv-eval/") else sys.executable
    if arguments[:2] == ["-m", "knowref60k"]:
        check_knowref60k(arguments[2:])
        return
    if arguments[0] == "-m":
        module = arguments[1]
        inside = (REPO / (module.replace(".", "/") + ".py")).is_file()
        assert inside or python != sys.executable, f"no module {module}"
        subcommand = [arguments[2]] if len(arguments) > 2 and arguments[2].isalpha() else []
        text = script_help(python, "-m", module, *subcommand)
    else:
        assert (REPO / arguments[0]).is_file(), f"no script {arguments[0]}"
        text = script_help(python, arguments[0])
    for option in options(arguments):
        assert lists(text, option), f"{arguments[:2]} has no option {option}"


def check_make(arguments: list[str]) -> None:
    targets = [word for word in arguments[1:] if "=" not in word and not word.startswith("-")]
    for target in targets or ["help"]:
        result = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True)
        assert result.returncode == 0, f"make {target}: {result.stderr.strip()}"


def run_line(words: list[str]) -> None:
    program, arguments = words[0], words[1:]
    if program == "make":
        check_make(words)
    elif program.endswith("knowref60k"):
        check_knowref60k(arguments)
    elif program.endswith("python"):
        check_python(program, arguments)
    else:
        raise AssertionError(f"a command the docs test cannot run: {' '.join(words)}")


def test_every_code_block_says_what_it_is() -> None:
    for path in DOCS:
        for match in BLOCK.finditer(path.read_text(encoding="utf-8")):
            assert match.group(1), f"{path.name}: a code block without a language (bash, python or text)"
            assert match.group(1) in {"bash", *NOT_COMMANDS}, f"{path.name}: block of {match.group(1)!r}"


@pytest.mark.integration
def test_every_documented_command_runs_with_the_options_it_is_shown_with() -> None:
    lines = command_lines()
    assert len(lines) >= 30, "the docs' commands were not found"
    for name, words in lines:
        try:
            run_line(words)
        except AssertionError as error:
            raise AssertionError(f"{name}: `{' '.join(words)}`: {error}") from None


def test_every_python_block_calls_what_the_package_exports() -> None:
    found = blocks("python")
    assert found, "the docs' Python examples were not found"
    for name, text in found:
        tree = ast.parse(text, filename=name)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "knowref60k":
                function = getattr(knowref60k, node.func.attr, None)
                assert function is not None, f"{name}: knowref60k.{node.func.attr} does not exist"
                parameters = inspect.signature(function).parameters
                for keyword in node.keywords:
                    assert keyword.arg in parameters, f"{name}: {node.func.attr}() takes no {keyword.arg}"


def test_docs_link_to_files_that_exist() -> None:
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if not target.startswith("http"):
                assert (path.parent / target).exists(), f"{path.name}: link to a missing {target}"


# Prose that names files and sections: the front page, the docs, and the READMEs beside data and code.
PROSE = [
    *DOCS,
    *sorted((REPO / "data").glob("**/README.md")),
    REPO / "annotation" / "README.md",
    REPO / "tools" / "README.md",
]
# Code whose comments and docstrings point readers to a section of a page.
CODE_DIRS = ("knowref60k", "annotation", "flows", "tools", "benchmarks")
CODE_FILES = ("Makefile", "pyproject.toml", "config.example.toml")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
# The one form the repository uses: `docs/decisions.md, "Label Studio"`; `FILE section "Heading"` and a
# bare README are read too, so that they cannot point nowhere either.
SECTION_REFERENCE = re.compile(
    r"(?P<file>(?:[\w.-]+/)*[\w.-]+\.md|\bREADME\b)`?(?:,|\s+section)(?:\s|#)*(?:section\s+)?"
    r"\"(?P<heading>[^\"\n]+)\""
)
# A section by number ("docs/decisions.md, section 2") points elsewhere once a section is added or moved.
NUMBERED_REFERENCE = re.compile(r"(?:[\w.-]+/)*[\w.-]+\.md`?,(?:\s|#)*(?:section\s+)?\d")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
EXTENSIONS = (".py", ".md", ".toml", ".lock", ".json", ".jsonl", ".parquet", ".tsv", ".txt", ".xml", ".html")
# Outputs, environments, released versions and placeholders are not files of the repository.
NOT_REPOSITORY = re.compile(r"^(output/|\.venv|data/releases/)|[*<>{}]|\.\.\.|YYYY|NNN|(^|/)N(/|$)")


def without_code_blocks(text: str) -> str:
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]|_", "", text).replace(" ", "-")


@cache
def headings(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The headings of a Markdown page, lower-cased without formatting, and their anchors, repeated ones
    numbered as GitHub numbers them (-1, -2, ...)."""
    texts = [h for h in HEADING.findall(without_code_blocks(path.read_text(encoding="utf-8")))]
    anchors: set[str] = set()
    for text in texts:
        base, n = slug(text), 0
        while (anchor := base if n == 0 else f"{base}-{n}") in anchors:
            n += 1
        anchors.add(anchor)
    return frozenset(re.sub(r"[`*]", "", t).strip().lower() for t in texts), frozenset(anchors)


def code_files() -> list[Path]:
    found = [REPO / name for name in CODE_FILES] + sorted(REPO.glob("*.lock"))
    for folder in CODE_DIRS:
        found += sorted(p for p in (REPO / folder).rglob("*.py") if "__pycache__" not in p.parts)
    return found


def bad_section_references(path: Path, root: Path = REPO) -> list[str]:
    """Section references that name a missing page or heading, or a section by its number. The page is
    looked for beside the file that names it, then from the repository's root."""
    text = path.read_text(encoding="utf-8")
    problems = [
        f"{m.group(0)!r}: a numbered section; name its heading" for m in NUMBERED_REFERENCE.finditer(text)
    ]
    for match in SECTION_REFERENCE.finditer(text):
        name = "README.md" if match.group("file") == "README" else match.group("file")
        page = path.parent / name if (path.parent / name).is_file() else root / name
        wanted = re.sub(r"\s+", " ", match.group("heading")).strip().lower()
        if not page.is_file() or wanted not in headings(page)[0]:
            problems.append(f"{match.group(0)!r}: no such page or heading")
    return [f"{path.relative_to(root)}: {problem}" for problem in problems]


def bad_anchors(path: Path, root: Path = REPO) -> list[str]:
    problems = []
    for target, anchor in LINK.findall(without_code_blocks(path.read_text(encoding="utf-8"))):
        page = path.parent / target if target else path
        if target.startswith("http") or page.suffix != ".md":
            continue
        if not page.is_file() or anchor not in headings(page)[1]:
            problems.append(
                f"{path.relative_to(root)}: a link to {target or path.name}#{anchor}: no such heading"
            )
    return problems


def repository_paths(text: str, root: Path = REPO) -> list[str]:
    """What a page writes in backticks that is a path inside the repository: it starts with one of the
    repository's top-level names, and has a folder or a known extension."""
    top = {p.name for p in root.iterdir() if not p.name.startswith(".")}
    found = []
    for code in INLINE_CODE.findall(without_code_blocks(text)):
        candidate = code.strip().split("::")[0].rstrip("/")
        if " " in candidate or NOT_REPOSITORY.search(candidate):
            continue
        if "/" not in candidate and not candidate.endswith(EXTENSIONS) and candidate != "Makefile":
            continue
        if candidate.split("/")[0] in top:
            found.append(candidate)
    return found


def test_every_link_to_a_section_finds_its_heading() -> None:
    problems = [problem for path in PROSE for problem in bad_anchors(path)]
    assert not problems, "\n".join(problems)


def test_every_repository_path_the_docs_name_exists() -> None:
    problems = [
        f"{path.relative_to(REPO)}: `{name}` does not exist"
        for path in PROSE
        for name in repository_paths(path.read_text(encoding="utf-8"))
        if not (REPO / name).exists()
    ]
    assert not problems, "\n".join(problems)


def test_every_section_reference_names_a_heading_of_its_page() -> None:
    problems = [problem for path in [*PROSE, *code_files()] for problem in bad_section_references(path)]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_a_bad_anchor_path_and_section(tmp_path: Path) -> None:
    """Each check fails on a planted mistake, so that passing means something."""
    (tmp_path / "knowref60k").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "decisions.md").write_text("# Decisions\n\n## Label Studio\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "# Real heading\n\nSee [here](#real-heading), [there](docs/decisions.md#label-studio) and "
        "[nowhere](#no-such-heading).\n\n"
        "Files: `knowref60k/no_such_module.py`, `output/run/x.parquet`, `docs/decisions.md`.\n\n"
        'Code says: docs/decisions.md, "No such section"; docs/decisions.md, "Label Studio".\n'
        "And docs/decisions.md, section 2.\n",
        encoding="utf-8",
    )
    assert bad_anchors(page, tmp_path) == ["README.md: a link to README.md#no-such-heading: no such heading"]
    assert repository_paths(page.read_text(), tmp_path) == [
        "knowref60k/no_such_module.py",
        "docs/decisions.md",
    ]
    problems = bad_section_references(page, tmp_path)
    assert len(problems) == 2, problems
    assert "numbered" in problems[0] and "No such section" in problems[1], problems
    assert slug("Fixes to the reference code's known bugs") == "fixes-to-the-reference-codes-known-bugs"
    assert slug("`*.candidates.parquet`") == "candidatesparquet"
