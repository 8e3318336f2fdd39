"""Knowledge entries: decisions, rules, facts and how-tos a team trusts, stored next to the code index and used at
query time.

`entry` (the record), `store` (SQLite + FTS5, versioned), `trust` (the score), `verify` (scope against a
snapshot), `conflicts` (opposite claims -> review), `curator` (decay, re-verify, retire), `candidates` (ADRs and
docs found after `semantica index`, `after_index`), `service` (the operations every front shares) and `inject`
(trusted relevant entries first in the context, a bounded boost for the hits they are about, feedback that moves
their trust). Nothing in indexing reads them, so they live on the query side.
"""
