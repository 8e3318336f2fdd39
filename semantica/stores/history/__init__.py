"""History as a signal: past commits vote for the files an issue is about, plus fix-frequency priors.

The stored form both sides read (pipelines/history reads git and writes it; serving votes with it).
The time cut: every piece reads only `commit` and its first-parent ancestors
(`git rev-list --first-parent <commit>`); the BM25 statistics, votes, ages and priors of a snapshot are computed
from those commits alone, with ages measured from the snapshot commit's author time (never the wall clock).

API::

    from pipelines.history.reader import HistoryReader      # the build side: git -> History
    from semantica.stores.history import HistorySearcher, save_history, load_history

    reader = HistoryReader(config.history, cache_path)   # SQLite cache: sha -> CommitRecord, shared by all
    history = reader.read(git_dir, "abc123")             # bare repos work; commits at or before abc123 only
    history.records                                      # kept CommitRecords, newest first: sha, parent,
                                                         #   author_time, message (.subject, .pr_title,
                                                         #   .issue_refs), files, lines_changed
    history.read_commits, history.cached_commits         # incremental: only unseen shas are read from git
    history.dropped                                      # {reason: count}: bot, skipped subject (revert, bump,
                                                         #   release...), trivial message, huge, no source change
    searcher = HistorySearcher(history, config.history)  # BM25 (bm25s) over messages + priors
    votes = searcher.index.votes(query_text)             # HistoryVotes: .files = [Vote(path, score,
                                                         #   voters=[Voter(sha, subject, date, similarity)])]
    searcher.priors.files["pkg/mod.py"]                  # Prior(changes, fixes, last_change_days)
    save_history(history, snapshot_dir / "history")      # Parquet + JSON; HistorySearcher.open(dir, config)

Filters and weights: `history.*` in conf/default.yaml (semantica/config/history.py).
"""

from semantica.stores.history.index import HistoryIndex, HistoryVotes, Vote, Voter
from semantica.stores.history.priors import Prior, Priors
from semantica.stores.history.records import CommitFilter, CommitRecord, History
from semantica.stores.history.store import HistorySearcher, load_history, save_history

__all__ = ["CommitFilter", "CommitRecord", "History", "HistoryIndex", "HistorySearcher", "HistoryVotes", "Prior",
           "Priors", "Vote", "Voter", "load_history", "save_history"]
