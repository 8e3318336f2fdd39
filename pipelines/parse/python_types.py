"""Light Python type inference at extraction time: the type of an expression, as written in the file.

A type is a string the repo-level resolver evaluates (`python_values.ValueResolver`):

- `Foo` / `mod.Foo`: a class named as written (annotations, `Type[Foo]` too);
- `call:f`: what calling `f` gives (a class: an instance; a function: its return type);
- `method:m:<t>`: what method `m` returns on a value of type `<t>` (chained calls, `self.m()`);
- `attr:a:<t>`: attribute `a` of a value of type `<t>` (its class's `self.a = ...`, or a property);
- `ref:NAME`: a name the function does not bind (a module variable, a class, an import);
- `of:<t>`: a sequence / iterable of `<t>` (`list[Foo]`, `[Foo()]`, a comprehension, `.append(Foo())`);
- `map:<t>`: a mapping whose values are `<t>` (`dict[str, Foo]`, `{k: Foo()}`, `d[k] = Foo()`);
- `elem:<t>`: what iterating `<t>` yields (a `for` target, a comprehension variable);
- `item:<t>`: what subscripting, `.pop()` or `.get()` on `<t>` yields;
- `ret:<t>`: what calling a value of type `<t>` gives (a local bound to a function, a decorated `def`);
- `tup:A|B|C`: a fixed-length tuple (`Tuple[A, B, C]`, `return a, b`); `part:N:<t>`: item N when unpacked.

Locals are bound by position (`python_locals.LocalTypes`): the nearest binding above a use wins.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.parse.nodes import node_text

CALL_PREFIX = "call:"
METHOD_PREFIX = "method:"
ATTR_PREFIX = "attr:"
REF_PREFIX = "ref:"
SEQ_PREFIX = "of:"
MAP_PREFIX = "map:"
ELEM_PREFIX = "elem:"
ITEM_PREFIX = "item:"
RET_PREFIX = "ret:"
TUPLE_PREFIX = "tup:"  # "tup:A|B|C": a fixed-length tuple of those types ("" for an unknown item)
PART_PREFIX = "part:"  # "part:N:<t>": item N of a tuple when unpacked (`a, b = f()`), else an element
SELF_TYPE = "Self"  # a method that returns self (or `cls(...)`, or is annotated `-> Self`) returns its own class
_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")
_NONE = "None"
# generic heads whose first argument is the element type / whose second is the value type
_SEQUENCES = frozenset({"List", "list", "Sequence", "MutableSequence", "Iterable", "Iterator", "Set", "set",
                        "FrozenSet", "frozenset", "AbstractSet", "MutableSet", "Deque", "deque", "Collection",
                        "Generator", "AsyncIterator", "AsyncIterable", "AsyncGenerator", "Reversible"})
_MAPPINGS = frozenset({"Dict", "dict", "Mapping", "MutableMapping", "DefaultDict", "defaultdict", "OrderedDict",
                       "ChainMap"})
_TUPLES = frozenset({"Tuple", "tuple"})
_WRAPPERS = frozenset({"Optional", "ClassVar", "Final", "Annotated", "Type", "type", "Required", "NotRequired",
                       "ReadOnly"})
_UNION = "Union"
_OPAQUE = frozenset({"Callable", "Any", "object", "Literal", "TypeVar"})


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def annotation_kind(text: str) -> str:
    """A type string from annotation text: `Foo`, `Optional[Foo]`, `Foo | None`, `"Foo"` -> "Foo";
    `list[Foo]` -> "of:Foo"; `Dict[str, Foo]` -> "map:Foo"; `Tuple[Foo, ...]` -> "of:Foo"; else ""."""
    text = text.strip().strip("'\"").strip()
    parts = [p for p in _split_top(text, "|") if p and p != _NONE]
    if not parts:
        return ""
    text = parts[0]
    head, _, rest = text.partition("[")
    head = head.strip()
    base = head.rsplit(".", 1)[-1]
    args = _split_top(rest[: rest.rfind("]")], ",") if rest else []
    if base in _WRAPPERS or base == _UNION:
        real = [a for a in args if a and a.strip("'\"") != _NONE]
        return annotation_kind(real[0]) if real else ""
    if base in _SEQUENCES or (base in _TUPLES and len(args) == 2 and args[1] == "..."):
        inner = annotation_kind(args[0]) if args else ""
        return SEQ_PREFIX + inner if inner else ""
    if base in _MAPPINGS:
        inner = annotation_kind(args[1]) if len(args) >= 2 else ""
        return MAP_PREFIX + inner if inner else ""
    if base in _TUPLES and args:
        return tuple_kind([annotation_kind(a) for a in args])
    if base in _TUPLES or base in _OPAQUE:
        return ""
    return head if _NAME.fullmatch(head) else ""


def tuple_kind(items: list[str]) -> str:
    """`tup:A|B` from item types (a nested tuple item is unknown: the string stays flat); "" when all unknown."""
    flat = ["" if k.startswith(TUPLE_PREFIX) else k for k in items]
    return TUPLE_PREFIX + "|".join(flat) if any(flat) else ""


def annotation_type(node: Any) -> str:
    """`annotation_kind` of an annotation node ("" for None)."""
    return annotation_kind(node_text(node)) if node is not None else ""


def walk(node: Any, types: tuple[str, ...], into_functions: bool = True) -> list[Any]:
    """Descendants of the given types in source order (not into nested classes; optionally not into
    nested functions)."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        for child in current.named_children:
            if child.type in types:
                found.append(child)
            if child.type != "class_definition" and (into_functions or child.type != "function_definition"):
                stack.append(child)
    found.sort(key=lambda n: n.start_byte)
    return found


def is_self_call(node: Any) -> bool:
    """`cls(...)` / `self(...)`: a classmethod building its own class."""
    fn = node.child_by_field_name("function") if node.type == "call" else None
    return fn is not None and fn.type == "identifier" and node_text(fn) in ("cls", "self")
