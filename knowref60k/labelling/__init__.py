"""Labelling by people, independent of the tool they label in: when a task is decided (screening and
resolution rules), what a rule costs in votes, how good each annotator is, and where the work stands."""
