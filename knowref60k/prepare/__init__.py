"""Preparation: de-duplication across dumps, then gender-preserving name perturbation."""
