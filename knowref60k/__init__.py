"""knowref60k: mine Winograd-style pronoun problems from Reddit dumps."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    import pyarrow as pa


def load_release(path: Any, split: str) -> "pa.Table":
    """One split of a release as a pyarrow Table: `knowref60k.load_release("data/releases/v1", "test")`."""
    from knowref60k.release import load_release as load

    return load(path, split)
