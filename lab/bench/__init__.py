"""Study benches: one-off measurements of a setting against another (`python -m lab.bench.NAME`)."""
