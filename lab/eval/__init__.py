"""Evaluation studies: cross-validated choices of defaults and reports over replayed lists."""
