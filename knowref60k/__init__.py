"""knowref60k: mine Winograd-style pronoun problems from Reddit dumps."""

__version__ = "0.1.0"
