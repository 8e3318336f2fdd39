"""Build a flow golden set ("who calls X" / "what does X call") with jedi, independently of Semantica.

Gold comes from jedi's reference search and goto (its own inference) plus Python's `ast` for the
function that encloses each call, never from Semantica's parser or resolver. Function ids follow
the index's convention (`path::Qual.name`; nested functions belong to their outer function; a call
of a class means its `__init__` when the class defines one). Only names and paths are written.

    python -m lab.eval.flow_gold --mirror $SEMANTICA_MIRRORS/pallets+click/repo --repo pallets/click \
        --commit 2c8cd3a... --out conf/golden/flow-click.jsonl
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

INIT = "__init__"
TEST_PARTS = ("tests/", "test/", "docs/", "examples/")


@dataclass
class Def:
    """A definition the index makes a symbol of: (path, qualname, line of its `def`/`class` name)."""

    path: str
    qual: str
    kind: str  # "function" or "class"
    line: int
    end: int

    @property
    def node_id(self) -> str:
        return f"{self.path}::{self.qual}"


def definitions(path: str, tree: ast.Module) -> list[Def]:
    """Module- and class-level defs (through if/try/with/for/while at those levels), like the index."""
    found: list[Def] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(Def(path, prefix + node.name, "function", node.lineno, node.end_lineno or node.lineno))
            elif isinstance(node, ast.ClassDef):
                found.append(Def(path, prefix + node.name, "class", node.lineno, node.end_lineno or node.lineno))
                walk(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.AsyncWith, ast.AsyncFor)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(node, field, []) or [], prefix)
                for handler in getattr(node, "handlers", []) or []:
                    walk(handler.body, prefix)

    walk(tree.body, "")
    return found


def enclosing(defs: list[Def], line: int) -> Def | None:
    """Innermost function def holding `line` (a call in a class body belongs to no function)."""
    holding = [d for d in defs if d.kind == "function" and d.line <= line <= d.end]
    return min(holding, key=lambda d: d.end - d.line) if holding else None


class JediFlow:
    """Callers and callees of functions of one checked-out repository, by jedi."""

    def __init__(self, root: Path) -> None:
        import jedi

        self.root = root
        self.project = jedi.Project(str(root))
        self.sources: dict[str, str] = {}
        self.defs: dict[str, list[Def]] = {}
        for file in sorted(root.rglob("*.py")):
            rel = file.relative_to(root).as_posix()
            try:
                text = file.read_text(encoding="utf-8")
                tree = ast.parse(text)
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            self.sources[rel] = text
            self.defs[rel] = definitions(rel, tree)
        self.by_line = {(d.path, d.line): d for defs in self.defs.values() for d in defs}
        self.by_id = {d.node_id: d for defs in self.defs.values() for d in defs}
        self._scripts: dict[str, object] = {}

    def script(self, rel: str):  # noqa: ANN201 - jedi.Script
        import jedi

        if rel not in self._scripts:
            self._scripts[rel] = jedi.Script(self.sources[rel], path=str(self.root / rel), project=self.project)
        return self._scripts[rel]

    def _rel(self, module_path: object) -> str | None:
        try:
            return Path(str(module_path)).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None

    def _target(self, name: object) -> str | None:
        """The index id a jedi definition names (a class -> its own `__init__` when it has one)."""
        rel = self._rel(getattr(name, "module_path", None))
        line = getattr(name, "line", None)
        d = self.by_line.get((rel, line)) if rel and line else None
        if d is None:
            return None
        if d.kind == "class" and f"{d.node_id}.{INIT}" in self.by_id:
            return f"{d.node_id}.{INIT}"
        return d.node_id

    def callers(self, d: Def) -> list[str]:
        """Functions whose bodies call `d` (by jedi's references to its name, kept where called)."""
        lines = self.sources[d.path].splitlines()
        column = lines[d.line - 1].index(d.qual.rsplit(".", 1)[-1], lines[d.line - 1].index("def ") + 3)
        found: set[str] = set()
        for ref in self.script(d.path).get_references(d.line, column, scope="project"):
            rel = self._rel(ref.module_path)
            if rel is None or rel not in self.sources or (rel, ref.line) == (d.path, d.line):
                continue
            text = self.sources[rel].splitlines()[ref.line - 1]
            after = text[ref.column + len(ref.name):].lstrip()
            if not after.startswith("("):
                continue
            owner = enclosing(self.defs[rel], ref.line)
            if owner is not None and owner.node_id != d.node_id:
                found.add(owner.node_id)
        return sorted(found)

    def callees(self, d: Def) -> list[str]:
        """Repository functions the body of `d` calls (jedi goto on each call's name)."""
        tree = ast.parse(self.sources[d.path])
        node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno == d.line), None)
        if node is None:
            return []
        found: set[str] = set()
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            fn = call.func
            if isinstance(fn, ast.Name):
                line, col = fn.lineno, fn.col_offset
            elif isinstance(fn, ast.Attribute) and fn.end_lineno is not None and fn.end_col_offset is not None:
                line, col = fn.end_lineno, fn.end_col_offset - len(fn.attr)
            else:
                continue
            try:
                names = self.script(d.path).goto(line, col, follow_imports=True)
            except Exception:  # jedi gives up on some dynamic code: no gold for that call
                continue
            for name in names:
                target = self._target(name)
                if target and target != d.node_id:
                    found.add(target)
        return sorted(found)


def checkout(mirror: Path, commit: str, into: Path) -> None:
    archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def build(mirror: Path, repo: str, commit: str, per_op: int, seed: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="flow-gold-") as tmp:
        root = Path(tmp)
        checkout(mirror, commit, root)
        flow = JediFlow(root)
        functions = [d for defs in flow.defs.values() for d in defs
                     if d.kind == "function" and not d.path.startswith(TEST_PARTS) and "/tests/" not in d.path]
        rng = random.Random(seed)
        rng.shuffle(functions)
        rows: list[dict] = []
        for op, finder, phrase in (("callers", flow.callers, "who calls {}"), ("callees", flow.callees, "what does {} call")):
            taken = 0
            for d in functions:
                if taken >= per_op:
                    break
                gold = finder(d)
                if not gold:
                    continue
                taken += 1
                rows.append({"repo": repo, "commit": commit, "op": op, "target": d.node_id,
                             "question": phrase.format(d.qual), "gold": gold, "gold_tool": "jedi"})
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flow-gold", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", required=True, type=Path, help="bare git directory of the repository")
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--per-op", type=int, default=30, help="questions per op")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args(argv)
    rows = build(args.mirror, args.repo, args.commit, args.per_op, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
