"""Parse: chunks, symbols and raw graph facts of ONE file from ONE tree-sitter parse, then the
repo-level resolution of names to node ids.

Split by concern: `languages` (node-type specs, grammar cache), `families` (one module per language
family: node types, import extraction and resolution, and their registry), `chunking`, `extract`
(generic tree-sitter extraction), `resolution` (`GraphResolver`) and `file_parser` (`FileParser.parse`,
the per-file entry a Ray Data map calls). The language table itself is `semantica/languages/`.
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
from pipelines.parse.families import FAMILIES, Family, register_family, spec_of, unregister_family
from pipelines.parse.file_parser import FileParser
from pipelines.parse.languages import DOC_LANGUAGES, LanguageSpec
from pipelines.parse.resolution import GraphResolver

__all__ = [
    "DOC_LANGUAGES", "FAMILIES", "MAX_OVERLAP_FRACTION", "MAX_RESOLVE_DEPTH", "UNRESOLVED_PREFIX",
    "ChunkBuilder", "Family", "FileParser", "GraphResolver", "LanguageSpec", "ParsedFile", "RawBase", "RawCall",
    "RawImport", "RawRef", "parse_problems", "register_family", "spec_of", "split_lines", "unregister_family",
]
