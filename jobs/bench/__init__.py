"""Benchmarks (not tests): `python -m jobs.bench` (indexing, query latency) and `python -m jobs.bench http`."""
