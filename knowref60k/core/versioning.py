"""What version of the code made an output."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

__version__ = "0.1.0"

PACKAGE = "knowref60k"
PACKAGE_DIR = Path(__file__).resolve().parent.parent


# The data files rules and models read (the encoder's adapters too); scripts and READMEs beside them
# change no output.
DATA_SUFFIXES = frozenset({".tsv", ".txt", ".json", ".safetensors"})


def code_fingerprint(*modules: str, root: Path | None = None) -> str:
    """Hash of the source of `modules` and of every module of the package they import, directly or not.

    A stage's outputs are invalidated by a change to the stage or to anything it uses, while a change to
    an unrelated module (the CLI, say) leaves them valid. `root` is the package's folder (tests use a copy).
    """
    digest = hashlib.sha256()
    for name, path in sorted(module_sources(modules, root or PACKAGE_DIR).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def data_fingerprint(*folders: Path) -> str:
    """Hash of every file in `folders` (name lists, bot lists): rules read them, so a new list must
    invalidate outputs made with the old one, as a code change does."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def module_sources(modules: Iterable[str], root: Path) -> dict[str, Path]:
    """The source file of each module and of each package module it imports, transitively."""
    found: dict[str, Path] = {}
    pending = list(modules)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        path = _source_of(name, root)
        if path is None:
            continue
        found[name] = path
        pending.extend(_imported_package_modules(path, root))
    return found


def _source_of(name: str, root: Path) -> Path | None:
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        relative = Path(*name.split(".")[1:])
        for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
            if relative.parts and candidate.is_file():
                return candidate
        return None
    spec = importlib.util.find_spec(name)
    return Path(spec.origin) if spec and spec.origin and spec.origin.endswith(".py") else None


def _imported_package_modules(path: Path, root: Path) -> list[str]:
    """Package modules named by the file's imports, at any depth (imports inside functions count too)."""
    names = []
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    inside = [name for name in names if name.startswith(PACKAGE + ".")]
    return [name for name in inside if _source_of(name, root) is not None]
