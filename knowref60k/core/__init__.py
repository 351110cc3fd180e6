"""Shared foundations: records, configuration, counters, files, versions, worker pools."""
