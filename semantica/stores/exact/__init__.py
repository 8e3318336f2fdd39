"""Exact and regex search over a snapshot's files (docs/grep.md): patterns compiled for RE2 as ripgrep reads
them (`pattern`), shards of line-aligned segments with trigram postings in SQLite FTS5 (`store`), line matching
(`matcher`)."""

from semantica.stores.exact.matcher import FileMatches, LineMatch, add_context, file_lines, match_file
from semantica.stores.exact.pattern import CompiledPattern, PatternError, PatternSpec, compile_pattern, fts_query
from semantica.stores.exact.store import EXACT_FORMAT, ExactShard, Run, StoredFile, read_in_order, segments, write_shard

__all__ = ["EXACT_FORMAT", "CompiledPattern", "ExactShard", "FileMatches", "LineMatch", "PatternError",
           "PatternSpec", "Run", "StoredFile", "add_context", "compile_pattern", "file_lines", "fts_query", "match_file",
           "read_in_order", "segments", "write_shard"]
