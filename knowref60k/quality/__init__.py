"""Quality work on extraction: the hand-judged gold set and its pool, scoring extraction against it,
the validity score's training data and training, and the answers screeners give. Nothing here runs on
a dump: the extraction workers import none of it."""
