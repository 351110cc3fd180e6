"""The overlap audit: parse items, index a corpus, score benchmarks and releases against it."""
