"""Prefect flows: thin orchestration over the `knowref60k` library (one task per input file)."""
