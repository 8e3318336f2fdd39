"""The learned localizer: cheap candidate lists, a versioned feature schema and LightGBM rankers.

One code path for training (jobs/localizer, over public repositories' commits) and for query time
(serving/core/localize.py): both hand `CandidateIndex` a snapshot's source files (every language with
function spans) and a query, and get the same candidates and the same features.
"""
