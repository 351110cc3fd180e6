"""Extraction: cleaning, sentence splitting and the filter stages that find candidates."""
