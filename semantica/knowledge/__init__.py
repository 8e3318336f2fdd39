"""Knowledge entries: decisions, rules, facts and how-tos a team trusts, stored next to the code index.

`entry` (the record), `store` (SQLite + FTS5, versioned), `trust` (the score), `verify` (scope against a
snapshot), `conflicts` (opposite claims -> review), `curator` (decay, re-verify, retire), `candidates`
(ADRs and docs found at index time). Query-time use lives in `serving/knowledge/`.
"""
