"""Evaluation: SWE-bench localization, the golden set, metrics, offline replay and the report."""
