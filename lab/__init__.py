"""The team's own studies: one-off measurement scripts, device scripts, study benches, their results and notes.

Not in the wheel: `lab` imports the product (`semantica`, `pipelines`, `serving`, `jobs`), the product never imports
`lab` (tests/test_wall.py). The catalogue of experiments is lab/README.md.
"""
