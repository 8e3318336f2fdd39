"""The Rust family: `use` trees (one RawImport per path, `as` aliases kept) and `mod x;` declarations,
resolved to module files.

Module files follow the compiler's rules: a crate's root module is `src/lib.rs` or `src/main.rs` beside
its `Cargo.toml`; module `a::b` is `src/a/b.rs` or `src/a/b/mod.rs`; a file `x.rs` holds its child modules
in `x/`, and `lib.rs`, `main.rs` and `mod.rs` in their own directory. `crate::`, `self::` and `super::`
paths resolve from there; an unprefixed path resolves only where its first segment is a child module of
the file's module (else it names another crate). A path resolves to the deepest module file it names
(`use crate::a::b::Item` -> `src/a/b.rs`).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import node_text

NAME = "rust"
CARGO = "Cargo.toml"
ROOT_FILES = ("lib.rs", "main.rs")
SELF_DIR_FILES = frozenset({"lib.rs", "main.rs", "mod.rs"})
_PUNCTUATION = re.compile(r"\s*(::|\{|\}|,)\s*")
_WHITESPACE = re.compile(r"\s+")

SPEC = LanguageSpec(
    family=NAME,
    functions=frozenset({"function_item"}),
    classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
    namespaces=frozenset({"impl_item", "mod_item"}),
    imports=frozenset({"use_declaration", "mod_item"}),
    call_query="(call_expression) @call",
    attached=frozenset({"attribute_item"}),  # `#[derive(...)]` between a rustdoc comment and its item
)


def imports(node: Any, line: int) -> list[RawImport]:
    """`use a::{b, c::D as E}` -> a::b, a::c::D (alias E); `mod x;` -> self::x; `mod x { ... }` -> none."""
    if node.type == "mod_item":
        name = node_text(node.child_by_field_name("name"))
        return [RawImport(f"self::{name}", "", "", line)] if name and node.child_by_field_name("body") is None else []
    argument = node.child_by_field_name("argument")
    if argument is None:
        return []
    return [RawImport(path, "", alias, line) for path, alias in use_paths(_normalize(node_text(argument)))]


def _normalize(text: str) -> str:
    return _PUNCTUATION.sub(r"\1", _WHITESPACE.sub(" ", text)).strip()


def use_paths(tree: str) -> list[tuple[str, str]]:
    """A use tree (no space around `::`, braces, commas) -> (path, alias) per leaf; `self` in a list names the prefix itself."""
    open_at = tree.find("{")
    if open_at < 0:
        path, _, alias = tree.partition(" as ")
        return [(path.strip(), alias.strip())]
    prefix, inner = tree[:open_at], tree[open_at + 1 : tree.rfind("}")]
    found: list[tuple[str, str]] = []
    for item in _top_level_split(inner):
        item = item.strip()
        if item == "self":
            found.append((prefix.removesuffix("::"), ""))
        elif item:
            found.extend((prefix + path, alias) for path, alias in use_paths(item))
    return found


def _top_level_split(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def crate_src(repo: RepoFiles, path: str) -> str | None:
    """The `src` directory of the crate `path` belongs to (nearest Cargo.toml above it), or None."""
    directory = posixpath.dirname(path)
    while True:
        cargo = posixpath.join(directory, CARGO) if directory else CARGO
        if cargo in repo.paths:
            src = posixpath.join(directory, "src") if directory else "src"
            return src if path.startswith(src + "/") else None
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def module_dir(path: str) -> str:
    """The directory that holds the child modules of the module `path` defines."""
    name = posixpath.basename(path)
    return posixpath.dirname(path) if name in SELF_DIR_FILES else path.removesuffix(".rs")


def module_file(repo: RepoFiles, directory: str, src: str) -> str | None:
    """The file defining the module whose children live in `directory`."""
    candidates = [posixpath.join(src, f) for f in ROOT_FILES] if directory == src else \
        [directory + ".rs", posixpath.join(directory, "mod.rs")]
    return next((c for c in candidates if c in repo.paths), None)


def _child(repo: RepoFiles, directory: str, name: str) -> str | None:
    return next((c for c in (posixpath.join(directory, name + ".rs"), posixpath.join(directory, name, "mod.rs"))
                 if c in repo.paths), None)


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    src = crate_src(repo, path)
    if src is None:
        return []
    segments = [s for s in imp.module.split("::") if s and s != "*"]
    if not segments:
        return []
    head = segments[0]
    directory = module_dir(path)
    if head == "crate":
        directory, segments = src, segments[1:]
    elif head == "self":
        segments = segments[1:]
    elif head == "super":
        while segments and segments[0] == "super":
            if directory == src:
                return []
            directory, segments = posixpath.dirname(directory), segments[1:]
    elif _child(repo, directory, head) is None:  # another crate (std, a dependency)
        return []
    found = module_file(repo, directory, src)
    for segment in segments:
        child = _child(repo, directory, segment)
        if child is None:
            break
        found, directory = child, posixpath.join(directory, segment)
    return [found] if found and found != path else []


FAMILY = Family(NAME, SPEC, imports, resolve_import, version="2")
