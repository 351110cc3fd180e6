"""Releases: agreement, thread-grouped splits, Parquet shards, the dataset card."""
