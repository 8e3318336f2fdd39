"""Parse: chunks, symbols and raw graph facts of ONE file from ONE tree-sitter parse, then the
repo-level resolution of names to node ids.

Split by concern: `languages` (the table), `chunking`, `extract` (generic tree-sitter extraction)
with one module per language (`python`, `javascript`, `go`, `java`, `rust`), `resolution`
(`GraphResolver`) and `file_parser` (`FileParser.parse`, the per-file entry a Ray Data map calls).
"""

from pipelines.parse.chunking import MAX_OVERLAP_FRACTION, ChunkBuilder, split_lines
from pipelines.parse.facts import (
    MAX_RESOLVE_DEPTH,
    UNRESOLVED_PREFIX,
    ParsedFile,
    RawBase,
    RawCall,
    RawImport,
    RawRef,
    parse_problems,
)
from pipelines.parse.file_parser import FileParser
from pipelines.parse.languages import DOC_LANGUAGES, SPECS, LanguageSpec
from pipelines.parse.resolution import JS_IMPORT_SUFFIXES, GraphResolver

__all__ = [
    "DOC_LANGUAGES", "JS_IMPORT_SUFFIXES", "MAX_OVERLAP_FRACTION", "MAX_RESOLVE_DEPTH", "SPECS",
    "UNRESOLVED_PREFIX", "ChunkBuilder", "FileParser", "GraphResolver", "LanguageSpec", "ParsedFile",
    "RawBase", "RawCall", "RawImport", "RawRef", "parse_problems", "split_lines",
]
