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
