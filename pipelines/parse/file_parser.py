"""`FileParser.parse`: one file -> chunks, symbols and raw graph facts (a Ray Data map calls it)."""

from __future__ import annotations

from pipelines.parse.chunking import ChunkBuilder
from pipelines.parse.extract import CodeExtraction
from pipelines.parse.facts import ParsedFile
from pipelines.parse.families import spec_of
from pipelines.source_files import SourceFile
from semantica.schema import ChunkKind
from semantica.stores.tokenizer import count_tokens


class FileParser(ChunkBuilder):
    """Turns one SourceFile into chunks, symbols and raw graph facts. Cheap to build and pickle."""

    def parse(self, repo: str, file: SourceFile) -> ParsedFile:
        """Parse one file; never raises for bad input (falls back to windows, sets `error`)."""
        out = ParsedFile(repo=repo, path=file.path, language=file.language, blob_sha=file.blob_sha)
        lines = file.text.split("\n")
        if lines and lines[-1] == "" and len(lines) > 1:
            lines.pop()
        tokens = [count_tokens(line) for line in lines]
        try:
            if spec_of(file.language) is not None:
                CodeExtraction(self.config, out, file, lines, tokens).run()
                return out
            if file.language == "markdown":
                out.chunks = self.sections(out, file, lines, tokens, self.markdown_headings(lines))
                return out
            if file.language == "rst":
                out.chunks = self.sections(out, file, lines, tokens, self.rst_headings(lines))
                return out
        except Exception as exc:  # a parser bug must not lose the file: keep it as windows
            out.error = f"parse failed, indexed as windows: {type(exc).__name__}: {exc}"
            out.symbols, out.edges, out.imports, out.calls, out.bases, out.refs = [], [], [], [], [], []
            out.returns, out.globals, out.attributes, out.properties = {}, {}, {}, []
            out.interfaces, out.receivers = [], {}
        out.chunks = self.windows(out, file, lines, tokens, 0, len(lines) - 1, ChunkKind.WINDOW)
        return out
