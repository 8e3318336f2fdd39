"""What a query says outright (paths, modules, traceback frames, identifiers) and the per-snapshot lookups the
candidate generator (semantica/localizer/features.py) matches it against, built once per snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from semantica import languages, linear_regex
from semantica.localizer.snapshot import Snapshot
from semantica.tokenizer import tokenize

TEST_PATH = linear_regex.compile(languages.DEFAULT_TEST_PATH.pattern)
FRAME = linear_regex.compile(r'File "([^"]+\.py)", line (\d+)(?:, in ([A-Za-z_][A-Za-z0-9_]*))?')
# A path starts after a character that cannot be in one (the one consumed before the group, not a look-behind).
PY_PATH = linear_regex.compile(r"(?:^|[^\w/.])((?:[\w.-]+/)*[\w-]+\.py)\b")
DOTTED = linear_regex.compile(r"\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\b")
IDENT = linear_regex.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")
CODE_LIKE = linear_regex.compile(r"_|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")


@dataclass
class QuerySignals:
    """What a query says outright: paths, modules, traceback frames and identifiers."""

    text: str
    tokens: list[str]
    paths: list[str]
    modules: list[str]
    frames: list[tuple[str, str]]  # (path, function) innermost last
    words: set[str]
    code_words: set[str]

    @classmethod
    def parse(cls, text: str) -> QuerySignals:
        frames = [(m.group(1).replace("\\", "/"), m.group(3) or "") for m in FRAME.finditer(text)]
        paths = [m.group(1) for m in PY_PATH.finditer(text)]
        modules = [m.group(1) for m in DOTTED.finditer(text) if not m.group(1).endswith(".py")]
        words = {w for w in IDENT.findall(text)}
        return cls(text, tokenize(text), paths, modules, frames, {w.lower() for w in words},
                   {w.lower() for w in words if CODE_LIKE.search(w)})


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
    lowercased stem and whether it is a test path (kept in `Snapshot.derived`)."""

    suffixes: list[frozenset[str]]
    stems: list[str]
    tests: dict[str, bool]

    @classmethod
    def of(cls, snapshot: Snapshot) -> FileLookups:
        found = snapshot.derived.get(cls)
        if found is None:
            paths = [doc.path for doc in snapshot.files]
            found = snapshot.derived[cls] = cls([path_suffixes(p) for p in paths],
                                                [p.rsplit("/", 1)[-1].removesuffix(".py").lower() for p in paths],
                                                {p: bool(TEST_PATH.search(p)) for p in paths})
        return found


@dataclass
class FunctionNames:
    """Lowercased last name of a function's qualified name -> its keys, built once per snapshot (in
    `Snapshot.derived`): the functions a query names by an exact identifier."""

    keys: dict[str, list[str]]

    @classmethod
    def of(cls, snapshot: Snapshot) -> FunctionNames:
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
    """`a.b.c` -> path suffixes it may name: a/b/c.py, a/b/c/__init__.py, a/b.py (c an attribute)."""
    parts = module.split(".")
    out = ["/".join(parts) + ".py", "/".join(parts) + "/__init__.py"]
    if len(parts) > 2:
        out.append("/".join(parts[:-1]) + ".py")
    return tuple(out)
