"""Repo-level resolution: the raw names of many ParsedFiles of ONE repo -> graph node ids.

Long because every edge kind resolves against the same repository-wide name tables: not split, since each part
would rebuild or import those tables.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from pipelines.parse.facts import (
    MAX_RESOLVE_DEPTH,
    OTHER_RECEIVER,
    PYTHON_INIT,
    SELF_RECEIVERS,
    SUPER_RECEIVER,
    UNRESOLVED_PREFIX,
    ParsedFile,
    RawBase,
    RawCall,
    RawImport,
)
from pipelines.parse.families import FAMILIES, spec_of
from pipelines.parse.families import go as go_family
from pipelines.parse.families import python as python_family
from pipelines.parse.go_methods import MethodSets
from pipelines.parse.python_calls import VALUE_CALL
from pipelines.parse.python_values import ValueResolver
from semantica.schema import Edge, EdgeType, Resolution, Symbol, SymbolKind, file_node_id, symbol_node_id

_MULTI_SITE = frozenset({EdgeType.CALLS.value, EdgeType.REFERENCES.value})


class GraphResolver:
    """Turns the raw names of many ParsedFiles of ONE repo into graph node ids.

    Imports are resolved by each family's module (`pipelines/parse/families/`). Python calls are resolved
    precisely (scopes, imports, inheritance); other languages by name: a call goes
    to the enclosing class's method of that name, else the unique definition of that name in the
    same file, the same directory, then the repo. What cannot be resolved stays as
    `name:<identifier>` with resolved=False.
    """

    def resolve(self, parsed: list[ParsedFile]) -> list[Edge]:
        """All edges of the repo (CONTAINS as parsed; CALLS/INHERITS/IMPORTS/REFERENCES resolved)."""
        return _Resolution(parsed).run()


class _Resolution:
    """State of one `GraphResolver.resolve` call (indexes over every file of the repo)."""

    def __init__(self, parsed: list[ParsedFile]) -> None:
        self.parsed = parsed
        self.symbols: dict[str, Symbol] = {s.symbol_id: s for pf in parsed for s in pf.symbols}
        self.paths = {pf.path for pf in parsed}
        self.family = {pf.path: spec.family for pf in parsed if (spec := spec_of(pf.language)) is not None}
        # files resolved by the Python resolver below (bindings, types, inheritance), not by bare name
        self.typed = {pf.path for pf in parsed if (spec := spec_of(pf.language)) is not None and spec.typed_calls}
        self.memo: dict[str, object] = {}  # RepoFiles: the families' per-resolution indexes
        self._texts = {pf.path: pf for pf in parsed}
        self._dirs: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.paths):
            self._dirs[posixpath.dirname(path)].append(path)
        self.modules = python_family.module_index(self)
        self.bindings: dict[str, dict[str, list[str]]] = {}
        self.star: dict[str, list[str]] = defaultdict(list)
        for pf in parsed:
            if pf.path in self.typed:
                self._python_bindings(pf)
        self.raw_bases: dict[str, list[RawBase]] = defaultdict(list)
        for pf in parsed:
            for b in pf.bases:
                self.raw_bases[b.class_id].append(b)
        self.by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
        for sid, sym in self.symbols.items():
            fam = self.family.get(sym.path)
            if fam:
                self.by_name[(fam, sym.name)].append(sid)
        self._bases_cache: dict[str, list[str]] = {}
        self.returns = {symbol_node_id(pf.path, q): kind for pf in parsed for q, kind in pf.returns.items()}
        self.globals = {pf.path: pf.globals for pf in parsed if pf.globals}
        self._subclasses: dict[str, list[str]] | None = None
        self.values = ValueResolver(self)

    def run(self) -> list[Edge]:
        edges: list[Edge] = []
        seen: dict[tuple[str, str, str], Edge] = {}

        def add(edge: Edge) -> None:  # one edge per (src, dst, type); every call / reference line kept
            key = (edge.src, edge.dst, edge.type)
            if edge.src == edge.dst:
                return
            kept = seen.get(key)
            if kept is None:
                if edge.type in _MULTI_SITE:
                    edge.lines = [edge.line]
                seen[key] = edge
                edges.append(edge)
            elif edge.type in _MULTI_SITE and edge.line not in kept.lines:
                kept.lines.append(edge.line)

        dispatch: list[Edge] = []  # added last: a direct edge to the same target wins
        for pf in self.parsed:
            python = pf.path in self.typed
            for e in pf.edges:
                if e.type == EdgeType.CONTAINS.value:
                    add(Edge(e.src, e.dst, e.type, e.repo, e.path, e.line, e.resolved, Resolution.SYNTAX.value))
            for b in pf.bases:
                dst = self.class_bases_one(pf.path, b)
                how = self._binding_kind(pf.path, b.base) if python else Resolution.NAME
                add(self._edge(self._implementer(pf.path, b.class_id), dst, UNRESOLVED_PREFIX + b.base,
                               EdgeType.INHERITS, pf, b.line, how))
            for i in pf.imports:
                for dst in self._import_targets(pf.path, i) or [None]:
                    add(self._edge(file_node_id(pf.path), dst, UNRESOLVED_PREFIX + i.module, EdgeType.IMPORTS, pf,
                                   i.line, Resolution.IMPORT))
            for c in pf.calls:
                dst, how = self._python_call(pf.path, c) if python else self._named_call(pf.path, c)
                if dst is None and c.name == VALUE_CALL:  # an unknown called value names nothing
                    continue
                add(self._edge(c.src, dst, UNRESOLVED_PREFIX + c.name, EdgeType.CALLS, pf, c.line, how))
                if python and dst and c.receiver in SELF_RECEIVERS:  # dynamic dispatch: self.m() may run an override
                    dispatch.extend(Edge(c.src, o, EdgeType.CALLS.value, pf.repo, pf.path, c.line,
                                         resolution=Resolution.OVERRIDE.value) for o in self.overrides(dst))
            for r in pf.refs:
                if not python:  # type names in type positions (Go), by the language's scoping
                    dst, how = self._named_ref(pf.path, r.name)
                    if dst and how is not None:
                        add(Edge(r.src, dst, EdgeType.REFERENCES.value, pf.repo, pf.path, r.line,
                                 resolution=how.value))
                    continue
                if r.kind:  # a method or function passed as an argument (`self.on_exit`, `mod.func`)
                    dst = self.values.function(pf.path, r.kind)
                    how = Resolution.SELF if r.name.startswith("self.") else Resolution.TYPE
                else:
                    dst = self._python_symbol(pf.path, r.name, MAX_RESOLVE_DEPTH)
                    how = self._binding_kind(pf.path, r.name) if dst else None
                if dst and how is not None:
                    add(Edge(r.src, dst, EdgeType.REFERENCES.value, pf.repo, pf.path, r.line, resolution=how.value))
        for edge in dispatch:
            add(edge)
        for edge in MethodSets(self.parsed, self.symbols).edges():  # Go: implicit interfaces
            add(edge)
        for edge in edges:
            edge.lines.sort()
        return edges

    def _implementer(self, path: str, class_id: str) -> str:
        """The type a base belongs to: `class_id` when defined there, else (Rust: `impl Trait for Type` in
        another file than `struct Type`) the one type of that name by the usual name resolution."""
        if class_id in self.symbols or path in self.typed:
            return class_id
        name = class_id.split("::", 1)[1].rsplit(".", 1)[-1]
        return self._unique(path, name, kinds={SymbolKind.CLASS.value}) or class_id

    @staticmethod
    def _edge(src: str, dst: str | None, fallback: str, etype: EdgeType, pf: ParsedFile, line: int,
              how: Resolution | None) -> Edge:
        how = how if dst is not None and how is not None else Resolution.UNRESOLVED
        return Edge(src, dst or fallback, etype.value, pf.repo, pf.path, line, resolved=dst is not None,
                    resolution=how.value)

    def _binding_kind(self, path: str, dotted: str) -> Resolution:
        """LOCAL when the head of `dotted` is defined in `path`, else IMPORT (an import or star binding)."""
        return Resolution.LOCAL if symbol_node_id(path, dotted.split(".")[0]) in self.symbols else Resolution.IMPORT

    # -- python modules and bindings --

    # -- RepoFiles (what the family modules resolve imports against) --

    def family_of(self, path: str) -> str:
        return self.family.get(path, "")

    def text_of(self, path: str) -> str:
        """A file's text from its chunks (overlapping windows joined by line number)."""
        pf = self._texts.get(path)
        if pf is None:
            return ""
        lines: dict[int, str] = {}
        for chunk in pf.chunks:
            for offset, text in enumerate(chunk.content.split("\n")):
                lines.setdefault(chunk.start_line + offset, text)
        return "\n".join(lines[n] for n in sorted(lines))

    def files_in(self, directory: str) -> list[str]:
        return list(self._dirs.get(directory, []))

    # -- python modules and bindings --

    def _python_bindings(self, pf: ParsedFile) -> None:
        """Local name -> absolute dotted target, from every import of the file (any scope)."""
        table: dict[str, list[str]] = {}
        for i in pf.imports:
            module = python_family.absolute(pf.path, i.module)
            if not module:
                continue
            if i.name == "*":
                self.star[pf.path].append(module)
            elif i.name:
                table[i.alias or i.name] = module.split(".") + [i.name]
            elif i.alias:
                table[i.alias] = module.split(".")
            else:
                head = module.split(".")[0]
                table[head] = [head]
        self.bindings[pf.path] = table

    def _module_path(self, parts: list[str]) -> str | None:
        return self.modules.get(".".join(parts)) if parts else None

    def _import_targets(self, path: str, imp: RawImport) -> list[str]:
        """Node ids of the files an import names, by its family's resolver (none: unresolved)."""
        family = FAMILIES.get(self.family.get(path, ""))
        return [file_node_id(p) for p in family.resolve_import(self, path, imp)] if family is not None else []

    # -- python names --

    def _python_symbol(self, path: str, dotted: str, depth: int) -> str | None:
        """Symbol id that `dotted` (as written in `path`) names, or None."""
        if depth <= 0 or not dotted:
            return None
        parts = dotted.split(".")
        if symbol_node_id(path, parts[0]) in self.symbols:
            return self._member(path, parts, depth)
        target = self.bindings.get(path, {}).get(parts[0])
        if target is None:
            for module in self.star.get(path, []):
                mpath = self._module_path(module.split("."))
                if mpath and mpath != path:
                    found = self._python_symbol(mpath, dotted, depth - 1)
                    if found:
                        return found
            return None
        absolute = target + parts[1:]
        for k in range(len(absolute), 0, -1):
            mpath = self._module_path(absolute[:k])
            if mpath:
                return self._member(mpath, absolute[k:], depth - 1) if k < len(absolute) else None
        return None

    def _member(self, mpath: str, parts: list[str], depth: int) -> str | None:
        """`parts` (Class.method...) inside the module at `mpath`, following re-exports and bases."""
        if not parts or depth <= 0:
            return None
        sid = symbol_node_id(mpath, ".".join(parts))
        if sid in self.symbols:
            return sid
        if len(parts) >= 2:
            owner = self._member(mpath, parts[:-1], depth)
            if owner and self.symbols[owner].kind == SymbolKind.CLASS.value:
                return self._find_method(owner, parts[-1], depth)
            return None
        return self._python_symbol(mpath, parts[0], depth - 1) if parts[0] in self.bindings.get(mpath, {}) \
            or self.star.get(mpath) else None

    def class_bases_one(self, path: str, base: RawBase) -> str | None:
        if path in self.typed:
            found = self._python_symbol(path, base.base, MAX_RESOLVE_DEPTH)
        else:
            found = self._unique(path, base.base.split(".")[-1], kinds={SymbolKind.CLASS.value})
        return found if found and self.symbols[found].kind == SymbolKind.CLASS.value else None

    def _class_bases(self, class_id: str) -> list[str]:
        if class_id not in self._bases_cache:
            self._bases_cache[class_id] = []
            sym = self.symbols.get(class_id)
            found = [self.class_bases_one(sym.path, b) for b in self.raw_bases.get(class_id, [])] if sym else []
            self._bases_cache[class_id] = [f for f in found if f]
        return self._bases_cache[class_id]

    def _find_method(self, class_id: str, name: str, depth: int, skip_own: bool = False) -> str | None:
        """`name` on the class or, depth-first in declaration order, on its repository bases."""
        if depth <= 0:
            return None
        if not skip_own:
            sid = f"{class_id}.{name}"
            if sid in self.symbols:
                return sid
        for base in self._class_bases(class_id):
            found = self._find_method(base, name, depth - 1)
            if found:
                return found
        return None

    def _python_call(self, path: str, call: RawCall) -> tuple[str | None, Resolution | None]:
        scope_id = symbol_node_id(path, call.scope) if call.scope else ""
        if call.name == VALUE_CALL or (not call.receiver and call.receiver_type):  # a called value / local
            found = self.values.callee(path, call.receiver_type)
            if found or call.name == VALUE_CALL:
                return found, Resolution.TYPE
        if call.receiver == SUPER_RECEIVER and call.receiver_type:  # super() in a class local to a function
            return self.values.method_on(path, call.receiver_type, call.name), Resolution.INHERITANCE
        if call.receiver in SELF_RECEIVERS:
            found = self._find_method(scope_id, call.name, MAX_RESOLVE_DEPTH) if scope_id else None
            own = found is not None and found == f"{scope_id}.{call.name}"
            return found, Resolution.SELF if own else Resolution.INHERITANCE
        if call.receiver == SUPER_RECEIVER:
            found = self._find_method(scope_id, call.name, MAX_RESOLVE_DEPTH, skip_own=True) if scope_id else None
            return found, Resolution.INHERITANCE
        typed = self.values.method_on(path, call.receiver_type, call.name) if call.receiver_type else None
        if call.receiver == OTHER_RECEIVER:
            return typed, Resolution.TYPE
        dotted = f"{call.receiver}.{call.name}" if call.receiver else call.name
        found = self._python_symbol(path, dotted, MAX_RESOLVE_DEPTH)
        if found is None and typed is not None:
            return typed, Resolution.TYPE
        how = self._binding_kind(path, dotted)
        if found and self.symbols[found].kind == SymbolKind.CLASS.value:
            return self.constructor(found), how
        return found, how

    def constructor(self, class_id: str) -> str:
        """What `C(...)` is a call of: C's own `__init__`, else C itself (an inherited `__init__` would make
        the construction a caller of the base's `__init__` and hide it from "who calls C")."""
        own = f"{class_id}.{PYTHON_INIT}"
        return own if own in self.symbols else class_id

    def overrides(self, method_id: str) -> list[str]:
        """Methods of the same name in the (transitive) repository subclasses of the method's class."""
        sym = self.symbols.get(method_id)
        if sym is None or not sym.parent:
            return []
        if self._subclasses is None:
            self._subclasses = defaultdict(list)
            for sid, s in self.symbols.items():
                if s.kind == SymbolKind.CLASS.value:
                    for base in self._class_bases(sid):
                        self._subclasses[base].append(sid)
        found, stack, seen = [], list(self._subclasses.get(sym.parent, [])), set()
        while stack:
            cls = stack.pop()
            if cls in seen:
                continue
            seen.add(cls)
            if f"{cls}.{sym.name}" in self.symbols:
                found.append(f"{cls}.{sym.name}")
            stack.extend(self._subclasses.get(cls, []))
        return sorted(found)

    # -- other languages: by name --

    def _unique(self, path: str, name: str, kinds: set[str] | None = None, qual_hint: str = "") -> str | None:
        return self._unique_how(path, name, kinds, qual_hint)[0]

    def _unique_how(self, path: str, name: str, kinds: set[str] | None = None,
                    qual_hint: str = "") -> tuple[str | None, Resolution | None]:
        """The one definition `name` can mean, and how sure: UNIQUE (qualified hint or only one in the
        repo) or NAME (the only one in the same file or directory while the repo has several)."""
        fam = self.family.get(path)
        candidates = [c for c in self.by_name.get((fam, name), []) if kinds is None or self.symbols[c].kind in kinds] \
            if fam else []
        if qual_hint:
            hinted = [c for c in candidates if self.symbols[c].qualname == qual_hint]
            if len(hinted) == 1:
                return hinted[0], Resolution.UNIQUE
        directory = posixpath.dirname(path)
        for pool in (
            [c for c in candidates if self.symbols[c].path == path],
            [c for c in candidates if posixpath.dirname(self.symbols[c].path) == directory],
            candidates,
        ):
            if len(pool) == 1:
                return pool[0], Resolution.UNIQUE if len(candidates) == 1 else Resolution.NAME
            if pool:
                return None, None
        return None, None

    def _named_ref(self, path: str, name: str) -> tuple[str | None, Resolution | None]:
        """A type name: `pkg.Name` through the file's import of `pkg`; a bare name in its own package
        (Go has no other unqualified scope), else the unique definition by name."""
        kinds = {SymbolKind.CLASS.value}
        if "." in name:
            package, member = name.split(".", 1)
            found = self._package_member(path, package, member, kinds)
            return (found, Resolution.IMPORT) if found else (None, None)
        if self.family.get(path) == go_family.NAME:
            directory = posixpath.dirname(path)
            local = [c for c in self.by_name.get((go_family.NAME, name), [])
                     if self.symbols[c].kind in kinds and posixpath.dirname(self.symbols[c].path) == directory]
            return (local[0], Resolution.LOCAL) if len(local) == 1 else (None, None)
        return self._unique_how(path, name, kinds)

    def _package_bindings(self, path: str) -> dict[str, list[str]]:
        """Go: the name each import binds in `path` (alias or package name) -> the package's files."""
        key = f"go:bindings:{path}"
        if key not in self.memo:
            table: dict[str, list[str]] = {}
            for imp in self._texts[path].imports:
                if imp.alias in ("_", "."):
                    continue
                files = go_family.resolve_import(self, path, imp)
                if files:
                    table[go_family.package_name(self, imp, files)] = files
            self.memo[key] = table
        return self.memo[key]  # type: ignore[return-value]

    def _package_member(self, path: str, package: str, member: str, kinds: set[str] | None = None) -> str | None:
        """The top-level `member` of the package `path` imports as `package` (Go), or None."""
        if self.family.get(path) != go_family.NAME:
            return None
        files = set(self._package_bindings(path).get(package, []))
        found = [c for c in self.by_name.get((go_family.NAME, member), []) if self.symbols[c].path in files
                 and "." not in self.symbols[c].qualname and (kinds is None or self.symbols[c].kind in kinds)]
        return found[0] if len(found) == 1 else None

    def _named_call(self, path: str, call: RawCall) -> tuple[str | None, Resolution | None]:
        if call.receiver and "." not in call.receiver:  # Go: `pkg.F()` through the file's import of pkg
            found = self._package_member(path, call.receiver, call.name)
            if found:
                return found, Resolution.IMPORT
        if call.receiver in SELF_RECEIVERS and call.scope:
            own = symbol_node_id(path, f"{call.scope}.{call.name}")
            if own in self.symbols:
                return own, Resolution.SELF
        if call.receiver == SUPER_RECEIVER and call.scope:
            found = self._find_method(symbol_node_id(path, call.scope), call.name, MAX_RESOLVE_DEPTH, skip_own=True)
            return found, Resolution.INHERITANCE
        hint = f"{call.receiver}.{call.name}" if call.receiver and call.receiver not in SELF_RECEIVERS else ""
        if call.receiver in SELF_RECEIVERS and call.scope:
            hint = f"{call.scope}.{call.name}"
        return self._unique_how(path, call.name, qual_hint=hint)
