"""knowref60k: mine Winograd-style pronoun problems from Reddit dumps."""

from typing import TYPE_CHECKING, Any

from knowref60k.core.versioning import __version__

__all__ = ["__version__", "load_release"]

if TYPE_CHECKING:
    import pyarrow as pa


def load_release(path: Any, split: str, debiased: bool = False, verify: bool = False) -> "pa.Table":
    """One split of a release as a pyarrow Table: `knowref60k.load_release("data/releases/v1", "test")`;
    `debiased=True` gives the items AFLite kept (a release cut with `release --debias`). Its files are
    checked against the manifest (present, row counts; `verify=True` also their sha256): a damaged
    release is an error naming the file."""
    from knowref60k.release.load import load_release as load

    return load(path, split, debiased, verify)
