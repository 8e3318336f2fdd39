"""The learned localizer's shared code: the BM25 table over a snapshot's files and functions (`table`, stored in a
snapshot by `stored`, parsed through `blobcache`), its candidate lists and versioned features (`features`,
`query_signals`), the model directory's files (`models`) and the dense function channel's inputs (`dense`).

Three sides run it, so it lives on the floor: the query stage (serving/localizer/), index time (the `localizer`
index kind stores the table: semantica/stores/index_kinds/localizer.py) and training (jobs/localizer/). Each
hands `CandidateGenerator` a table and a query and gets the same candidates and the same features.
"""
