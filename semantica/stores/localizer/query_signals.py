"""What a query says outright (paths, modules, traceback frames, identifiers) and the per-snapshot lookups the
candidate generator (semantica/stores/localizer/features.py) matches it against, built once per snapshot."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from semantica import languages
from semantica.languages.spans import span_suffixes, strip_suffix
from semantica.runtime import linear_regex
from semantica.stores.localizer.table import LocalizerTable
from semantica.stores.tokenizer import identifier_parts, tokenize

# every pattern is RE2 (linear_regex): no look-behind; a path starts after a character that cannot be in one (the one
# consumed before the group)
_SUFFIXES = "|".join(re.escape(s) for s in sorted((s.lstrip(".") for s in span_suffixes()), key=lambda s: (-len(s), s)))
FRAME = linear_regex.compile(r'File "([^"]+\.py)", line (\d+)(?:, in ([A-Za-z_][A-Za-z0-9_]*))?')
SOURCE_PATH = linear_regex.compile(rf"(?:^|[^\w/.])((?:[\w.-]+/)*[\w-]+\.(?:{_SUFFIXES}))\b")
_OTHER = "|".join(sorted((s.lstrip(".") for s in span_suffixes() if s != ".py"), key=lambda s: (-len(s), s)))
# `/src/x.go:123 +0x1d`, `src/x.rs:10:5` (Go panics, Rust and compiler messages): a frame's file, no function; not
# Python's `x.py:12` (pytest's report lines never were frames: a Python traceback says `File "x.py", line 12`)
LINE_FRAME = linear_regex.compile(rf"(?:^|[^\w/.])/?((?:[\w.-]+/)*[\w-]+\.(?:{_OTHER})):\d+\b")
# `at fn (src/x.ts:10:5)`, `at async Obj.fn (file:///app/x.js:3:1)`, `at src/x.js:1:2` (V8 stack frames)
JS_FRAME = linear_regex.compile(r"\bat (?:(?:async |new )?([\w$.<>]+) \()?([^\s()]+):\d+:\d+")
JS_FILE = linear_regex.compile(r"(?:[\w.@-]+/)*[\w.-]+\.[cm]?[jt]sx?")
# `at com.acme.Cls.method(Cls.java:42)`, `at com.acme.Outer$Inner.run(Outer.java:7)` (JVM stack frames)
JAVA_FRAME = linear_regex.compile(r"\bat ([\w$.<>]+)\(([\w$]+\.java):\d+\)")
DOTTED = linear_regex.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b")
# `tokio::sync::watch::Receiver`, `crate::io::Ready` (Rust paths; C++'s `a::b` name no files and match none)
SCOPED = linear_regex.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)\b")
IDENT = linear_regex.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")
CODE_LIKE = linear_regex.compile(r"_|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")


@dataclass
class QuerySignals:
    """What a query says outright: paths, modules, traceback frames and identifiers."""

    text: str
    tokens: list[str]
    paths: list[str]
    modules: list[str]
    scoped: list[str]
    frames: list[tuple[str, str]]  # (path, function) innermost last
    words: set[str]
    code_words: set[str]

    @classmethod
    def parse(cls, text: str) -> QuerySignals:
        frames = stack_frames(text)
        paths = [m.group(1) for m in SOURCE_PATH.finditer(text)]
        modules = [m.group(1) for m in DOTTED.finditer(text) if not m.group(1).endswith(".py")]
        words = {w for w in IDENT.findall(text)}
        scoped = [m.group(1) for m in SCOPED.finditer(text)]
        return cls(text, tokenize(text), paths, modules, scoped, frames, {w.lower() for w in words},
                   {w.lower() for w in words if CODE_LIKE.search(w)})


def stack_frames(text: str) -> list[tuple[str, str]]:
    """(path, function) of every stack frame the query quotes, in text order (innermost last for Python; the other
    runtimes print innermost first, and each frame counts alike). A Python traceback's frames come alone when it
    has any, so a Python query reads what it always read."""
    python = [(m.group(1).replace("\\", "/"), m.group(3) or "") for m in FRAME.finditer(text)]
    if python:
        return python
    found: list[tuple[int, str, str]] = []
    for m in JAVA_FRAME.finditer(text):  # the package names the directory: com/acme/Cls.java
        owner, _, method = m.group(1).rpartition(".")
        package = owner.rpartition(".")[0]
        found.append((m.start(), (package.replace(".", "/") + "/" if package else "") + m.group(2), method))
    for m in JS_FRAME.finditer(text):
        location = m.group(2).rpartition("://")[2].lstrip("/")  # file:///app/x.js -> app/x.js
        if JS_FILE.fullmatch(location):
            found.append((m.start(), location, (m.group(1) or "").rsplit(".", 1)[-1]))
    framed = {path for _, path, _ in found}
    for m in LINE_FRAME.finditer(text):
        if not any(path.endswith(m.group(1)) or m.group(1).endswith(path) for path in framed):
            found.append((m.start(), m.group(1), ""))
    return [(path, function) for _, path, function in sorted(found)]


def suffix_match(path: str, named: str) -> bool:
    """`named` (a path from the query, maybe absolute or site-packages) ends with the candidate path,
    or the candidate ends with `named` and `named` has a directory part."""
    named = named.lstrip("./")
    return named == path or named.endswith("/" + path) or ("/" in named and path.endswith("/" + named))


def path_suffixes(path: str) -> frozenset[str]:
    """The path and every tail after a "/": `a/b/c.py` -> {a/b/c.py, b/c.py, c.py}. `x.endswith("/" + p)` holds
    exactly when `p` is a tail of `x` other than `x`, so suffix matches become set lookups."""
    return frozenset([path, *(path[i + 1:] for i, ch in enumerate(path) if ch == "/")])


@dataclass
class FileLookups:
    """What the per-query loops read about each file of a snapshot, built once per snapshot: its path tails,
    lowercased stem and whether it is a test path (kept in `LocalizerTable.derived`)."""

    suffixes: list[frozenset[str]]
    stems: list[str]
    tests: dict[str, bool]
    by_suffix: dict[str, list[int]] = field(default_factory=dict)  # a path tail -> the files (positions) ending so
    by_stem: dict[str, list[int]] = field(default_factory=dict)  # a stem -> the files (positions) of that stem

    @classmethod
    def of(cls, snapshot: LocalizerTable) -> FileLookups:
        found = snapshot.derived.get(cls)
        if found is None:
            paths = [doc.path for doc in snapshot.files]
            found = cls([path_suffixes(p) for p in paths], [file_stem(p) for p in paths],
                        {p: languages.is_test_path(p) for p in paths})
            for position, (suffixes, stem) in enumerate(zip(found.suffixes, found.stems)):
                for suffix in suffixes:
                    found.by_suffix.setdefault(suffix, []).append(position)
                found.by_stem.setdefault(stem, []).append(position)
            snapshot.derived[cls] = found
        return found


ENTRY_STEMS = frozenset({"index", "mod", "lib", "main"})
"""Entry files outside Python (a package's `index.ts`, a Rust `mod.rs` / `lib.rs`, a `main.go`): too common for a
query word to name one (Python's own such names are the candidate generator's `UNNAMED_STEMS`)."""


def file_stem(path: str) -> str:
    """The lowercased file name without its suffix, as a query word may name the file; "" for another language's
    entry file (`ENTRY_STEMS`), which no word names."""
    stem = strip_suffix(path.rsplit("/", 1)[-1]).lower()
    return "" if stem in ENTRY_STEMS and not path.endswith(".py") else stem


@dataclass
class FunctionNames:
    """Lowercased last name of a function's qualified name -> its keys, built once per snapshot (in
    `LocalizerTable.derived`): the functions a query names by an exact identifier."""

    keys: dict[str, list[str]]

    @classmethod
    def of(cls, snapshot: LocalizerTable) -> FunctionNames:
        found = snapshot.derived.get(cls)
        if found is None:
            keys: dict[str, list[str]] = {}
            for fn in snapshot.functions:
                keys.setdefault(last_name(fn.qualname), []).append(fn.key)
            found = snapshot.derived[cls] = cls(keys)
        return found


def last_name(qualname: str) -> str:
    """`Class.method` -> `method`, lowercased (how query identifiers are compared)."""
    return qualname.rsplit(".", 1)[-1].lower()


def module_paths(module: str) -> tuple[str, ...]:
    """`a.b.c` -> path suffixes it may name: a/b/c.py, a/b/c/__init__.py, a/b.py (c an attribute), and the same
    forms in every other language with function spans (`com.acme.Cls` -> com/acme/Cls.java)."""
    parts = module.split(".")
    out = ["/".join(parts) + ".py", "/".join(parts) + "/__init__.py"]
    if len(parts) > 2:
        out.append("/".join(parts[:-1]) + ".py")
    for suffix in _OTHER_SUFFIXES:
        out.append("/".join(parts) + suffix)
        if len(parts) > 2:
            out.append("/".join(parts[:-1]) + suffix)
    return tuple(out)


_OTHER_SUFFIXES = tuple(s for s in span_suffixes() if s != ".py")


def scoped_paths(path: str) -> tuple[str, ...]:
    """`tokio::sync::watch::channel` -> the Rust files it may name in a crate's `src/`, as `module_paths` reads a
    dotted name: the module itself (src/sync/watch/channel.rs, .../channel/mod.rs) and its parent when the last
    segment may be an item (src/sync/watch.rs, src/sync/watch/mod.rs); a type names its parent and the file named
    after it (`tokio::sync::OnceCell` -> src/sync.rs, src/sync/mod.rs, src/sync/once_cell.rs). The first segment
    is the crate (or `crate`, `self`, `super`), which names no file; an entry stem (`tokio::main`) ends the path, and
    a type's members name its file."""
    parts: list[str] = []
    for part in path.split("::")[1:]:
        if part.lower() in ENTRY_STEMS:
            break
        parts.append(part)
        if part[:1].isupper():  # a type: what follows are its members (`Semaphore::MAX_PERMITS`)
            break
    if not parts:
        return ()
    modules: list[list[str]] = [parts[:-1]] if len(parts) > 1 else []
    out: list[str] = []
    if parts[-1][:1].isupper():
        out.append("src/" + "/".join([*parts[:-1], "_".join(p.lower() for p in identifier_parts(parts[-1]))]) + ".rs")
    else:
        modules.insert(0, parts)
    for module in modules:
        out += [f"src/{'/'.join(module)}.rs", f"src/{'/'.join(module)}/mod.rs"]
    return tuple(dict.fromkeys(out))
