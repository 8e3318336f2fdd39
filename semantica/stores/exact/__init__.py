"""Exact and regex search over a snapshot's files (docs/grep.md): patterns compiled for RE2 as ripgrep reads
them (`pattern`), shards of trigram postings plus contents in SQLite FTS5 (`store`), line matching (`matcher`)."""

from semantica.stores.exact.matcher import FileMatches, LineMatch, match_file
from semantica.stores.exact.pattern import CompiledPattern, PatternError, PatternSpec, compile_pattern, fts_query
from semantica.stores.exact.store import EXACT_FORMAT, ExactShard, StoredFile, read_in_order, write_shard

__all__ = ["EXACT_FORMAT", "CompiledPattern", "ExactShard", "FileMatches", "LineMatch", "PatternError",
           "PatternSpec", "StoredFile", "compile_pattern", "fts_query", "match_file", "read_in_order", "write_shard"]
