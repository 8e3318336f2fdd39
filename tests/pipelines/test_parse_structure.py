"""Structure beyond Python, through the real indexer on small repositories shaped like real ones (a ky-like
TypeScript HTTP client, a pflag-like Go flag package, a Rust crate): type declarations as symbols, doc
comments inside their definition's chunk, imports resolved as the compilers resolve them, and the graph ops
(`defs`, `importers`, `imports`, `impls`, `refs`) that read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipelines.indexer import Indexer
from semantica.config import Config
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from serving.graph.ops import GraphOps, SnapshotGraph
from serving.graph.structural import GraphOp
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)


def _index(root: Path, files: dict[str, str], name: str) -> Snapshot:
    config: Config = make_config(root)
    Indexer(config, progress=False).index(str(one_commit_repo(root / "repo", files)), name)
    return Snapshot.open(IndexLayout(config.paths.index_root).current(name), config)


def _answers(snapshot: Snapshot, op: GraphOp, name: str) -> set[str]:
    """The answer nodes' paths (module ops) or qualnames (symbol ops) of one graph op."""
    result = GraphOps().run_graphs(op, name, [SnapshotGraph.from_snapshot(snapshot)])
    return {a.qualname or a.path for a in result.answers}


def _chunk_of(snapshot: Snapshot, path: str, symbol: str) -> Any:
    return next(c for c in snapshot.chunks if c.path == path and c.symbol == symbol)


# -- TypeScript (shaped like sindresorhus/ky: ESM with `.js` specifiers for `.ts` files) --

TS_FILES = {
    "package.json": '{"name": "ky", "type": "module", "exports": "./distribution/index.js"}\n',
    "tsconfig.json": '{\n\t// the build reads source/ only\n\t"extends": "./tsconfig.base.json",\n'
                     '\t"compilerOptions": {\n\t\t"exactOptionalPropertyTypes": true,\n\t},\n'
                     '\t"include": ["source"],\n}\n',
    "tsconfig.base.json": '{\n\t"$schema": "https://json.schemastore.org/tsconfig",\n\t"compilerOptions": {\n'
                          '\t\t"baseUrl": ".",\n\t\t"paths": {"@utils/*": ["source/utils/*"], "#errors": '
                          '["source/errors/index.ts"]}\n\t}\n}\n',
    "source/index.ts": "/*! MIT License */\nimport {Ky} from './core/Ky.js';\n\n"
                       "export {default as HTTPError} from './errors/HTTPError.js';\n"
                       "export type {KyOptions, RetryOptions} from './types/options.js';\n\n"
                       "const ky = Ky.create();\nexport default ky;\n",
    "source/types/options.ts": "import type {Hooks} from './hooks.js';\n\n"
                               "export type KyHeadersInit = Record<string, string | undefined>;\n\n"
                               "/**\nCustom Ky options\n*/\n\nexport type KyOptions = {\n"
                               "\t/** Retry failed requests. */\n\tretry?: RetryOptions | number;\n"
                               "\thooks?: Hooks;\n\tprefixUrl?: URL | string;\n};\n\n"
                               "export interface RetryOptions {\n\tlimit?: number;\n\tmethods?: string[];\n}\n\n"
                               "export enum ResponseType {\n\tjson = 'application/json',\n\ttext = 'text/*',\n}\n\n"
                               "type InternalOptions = Required<KyOptions>;\n\n"
                               "interface Mergeable {\n\theaders?: KyHeadersInit;\n}\n",
    "source/types/hooks.ts": "export type BeforeRequestHook = (request: Request) => Request | void;\n\n"
                             "export type Hooks = {\n\tbeforeRequest?: BeforeRequestHook[];\n};\n",
    "source/core/Ky.ts": "import {mergeHeaders, deepMerge} from '../utils/merge.js';\n"
                         "import {delay} from '@utils/delay';\nimport {HTTPError} from '#errors';\n"
                         "import {TimeoutError} from '../errors';\n"
                         "import type {KyOptions} from '../types/options.js';\n\n"
                         "/**\nThe Ky instance: one per `ky.create()`.\n*/\nexport class Ky {\n"
                         "\tstatic create(options: KyOptions = {}): Ky {\n\t\treturn new Ky(deepMerge({}, options));\n"
                         "\t}\n\n\tconstructor(readonly options: KyOptions) {}\n\n"
                         "\t/**\n\tFetch with retries.\n\t@param input - the URL\n\t*/\n"
                         "\tasync fetch(input: string): Promise<Response> {\n\t\tawait delay(1);\n"
                         "\t\tconst response = await fetch(input, {headers: mergeHeaders({}, {})});\n"
                         "\t\tif (!response.ok) {\n\t\t\tthrow new HTTPError(response);\n\t\t}\n"
                         "\t\tif (response.status === 408) {\n\t\t\tthrow new TimeoutError(input);\n\t\t}\n"
                         "\t\treturn response;\n\t}\n}\n",
    "source/utils/merge.ts": "import type {KyHeadersInit} from '../types/options.js';\n\n"
                             "/**\nMerge two header sets; the second wins.\n\n@returns a new `Headers`\n*/\n"
                             "export const mergeHeaders = (source1: KyHeadersInit, source2: KyHeadersInit) => {\n"
                             "\tconst result = new Headers(source1 as HeadersInit);\n"
                             "\tfor (const [key, value] of new Headers(source2 as HeadersInit)) {\n"
                             "\t\tresult.set(key, value);\n\t}\n\treturn result;\n};\n\n"
                             "// Deep merge of plain objects; arrays are replaced, not concatenated.\n"
                             "export function deepMerge<T>(...sources: Array<Partial<T>>): T {\n"
                             "\treturn Object.assign({}, ...sources) as T;\n}\n",
    "source/utils/delay.ts": "/** Wait `ms` milliseconds. */\nexport default async function delay(ms: number) {\n"
                             "\tawait new Promise(resolve => setTimeout(resolve, ms));\n}\nexport {delay};\n",
    "source/errors/index.ts": "export {HTTPError} from './HTTPError.js';\nexport {TimeoutError} from './TimeoutError.js';\n",
    "source/errors/HTTPError.ts": "export class HTTPError extends Error {\n\tconstructor(readonly response: Response) {\n"
                                  "\t\tsuper(`Request failed with status code ${response.status}`);\n\t}\n}\n",
    "source/errors/TimeoutError.ts": "export class TimeoutError extends Error {\n\tconstructor(input: string) {\n"
                                     "\t\tsuper(`Request timed out: ${input}`);\n\t}\n}\n",
    "source/ui/Button.tsx": "export function Button(props: {label: string}) {\n\treturn <button>{props.label}</button>;\n}\n",
    "source/ui/App.tsx": "import {Button} from './Button.jsx';\nimport {legacy} from '../legacy/shim.mjs';\n\n"
                         "export const App = () => <Button label={legacy()} />;\n",
    "source/legacy/shim.mts": "export function legacy(): string {\n\treturn 'ok';\n}\n",
    "scripts/build.cjs": "'use strict';\nconst path = require('node:path');\nconst {run} = require('./run.cjs');\n"
                         "const config = require('../tsconfig.json');\n\n"
                         "run(path.join(__dirname, '..'), config).then(() => import('./report.mjs'));\n",
    "scripts/run.cts": "export async function run(root: string, config: object): Promise<void> {\n"
                       "\tconsole.log(root, config);\n}\n",
    "scripts/tasks.ts": "export const {run} = require('./run.cjs');\n",
    "scripts/report.mjs": "export default function report() {\n\treturn 'built';\n}\n",
}


@pytest.fixture(scope="module")
def ky(tmp_path_factory) -> Snapshot:
    return _index(tmp_path_factory.mktemp("ky"), TS_FILES, "structure/ky")


def test_typescript_type_aliases_interfaces_and_enums_are_symbols(ky: Snapshot) -> None:
    symbols = {s.qualname: s for s in ky.symbols if s.path == "source/types/options.ts"}
    assert {"KyHeadersInit", "KyOptions", "RetryOptions", "ResponseType", "InternalOptions", "Mergeable"} <= set(symbols)
    assert _answers(ky, GraphOp.DEFS, "KyOptions") == {"KyOptions"}
    kyoptions = symbols["KyOptions"]
    assert ky.file_lines("source/types/options.ts")[kyoptions.start_line - 1] == "/**"  # its JSDoc, across a blank
    assert "prefixUrl" in _chunk_of(ky, "source/types/options.ts", "KyOptions").content


def test_jsdoc_sits_in_its_definitions_chunk_not_a_chunk_of_its_own(ky: Snapshot) -> None:
    merge = _chunk_of(ky, "source/utils/merge.ts", "mergeHeaders")
    assert merge.content.startswith("/**\nMerge two header sets") and "result.set(key, value)" in merge.content
    assert _chunk_of(ky, "source/utils/merge.ts", "deepMerge").content.startswith("// Deep merge of plain objects")
    assert _chunk_of(ky, "source/core/Ky.ts", "Ky").content.startswith("/**\nThe Ky instance")
    assert _chunk_of(ky, "source/core/Ky.ts", "Ky.fetch").content.startswith("\t/**\n\tFetch with retries.")
    assert _chunk_of(ky, "source/utils/delay.ts", "delay").content.startswith("/** Wait `ms` milliseconds. */")
    unowned = [c.content for c in ky.chunks if not c.symbol and c.path.startswith("source/")]
    assert not [text for text in unowned if "Merge two header" in text or "Fetch with retries" in text
                or "Custom Ky options" in text or "The Ky instance" in text or "Wait `ms`" in text]


def test_esm_and_commonjs_specifiers_resolve_like_the_compiler(ky: Snapshot) -> None:
    assert _answers(ky, GraphOp.IMPORTS, "source/core/Ky.ts") == {
        "source/utils/merge.ts",  # '../utils/merge.js' names the .ts source
        "source/utils/delay.ts",  # tsconfig paths '@utils/*', from the extended base config
        "source/errors/index.ts",  # '#errors' (an exact paths pattern) and '../errors' (a directory's index)
        "source/types/options.ts",
    }
    assert _answers(ky, GraphOp.IMPORTERS, "source/utils/merge.ts") == {"source/core/Ky.ts"}
    assert _answers(ky, GraphOp.IMPORTERS, "source/errors/HTTPError.ts") == {"source/index.ts",
                                                                            "source/errors/index.ts"}  # re-exports
    assert _answers(ky, GraphOp.IMPORTS, "source/ui/App.tsx") == {"source/ui/Button.tsx",  # .jsx -> .tsx
                                                                 "source/legacy/shim.mts"}  # .mjs -> .mts
    # CommonJS require (.cjs -> .cts), a JSON require and a dynamic import(); node:path names a package
    assert _answers(ky, GraphOp.IMPORTS, "scripts/build.cjs") == {"scripts/run.cts", "tsconfig.json",
                                                                 "scripts/report.mjs"}
    assert _answers(ky, GraphOp.IMPORTS, "scripts/tasks.ts") == {"scripts/run.cts"}  # an exported require


# -- Go (shaped like spf13/pflag: flag values are types whose methods satisfy `Value`) --

GO_FILES = {
    "go.mod": "module github.com/acme/flags\n\ngo 1.21\n",
    "flag.go": "// Package flags implements POSIX/GNU-style --flags.\npackage flags\n\nimport \"strings\"\n\n"
               "// NormalizedName is a flag name that has been normalized according to rules\n"
               "// for the FlagSet (e.g. making '-' and '_' equivalent).\ntype NormalizedName string\n\n"
               "// Value is the interface to the dynamic value stored in a flag.\ntype Value interface {\n"
               "\tString() string\n\tSet(string) error\n\tType() string\n}\n\n"
               "// SliceValue is a secondary interface to all flags which hold a list of values.\n"
               "type SliceValue interface {\n\tValue\n\tAppend(string) error\n\tReplace([]string) error\n"
               "\tGetSlice() []string\n}\n\n"
               "// A Flag represents the state of a flag.\ntype Flag struct {\n\tName  string\n\tValue Value\n}\n\n"
               "// A FlagSet represents a set of defined flags.\ntype FlagSet struct {\n"
               "\tformal            map[NormalizedName]*Flag\n"
               "\tnormalizeNameFunc func(f *FlagSet, name string) NormalizedName\n}\n\n"
               "func (f *FlagSet) normalizeFlagName(name string) NormalizedName {\n"
               "\tif f.normalizeNameFunc == nil {\n\t\treturn NormalizedName(strings.ToLower(name))\n\t}\n"
               "\treturn f.normalizeNameFunc(f, name)\n}\n\n"
               "// VarP defines a flag with a value.\nfunc (f *FlagSet) VarP(value Value, name string) *Flag {\n"
               "\tflag := &Flag{Name: name, Value: value}\n\tif f.formal == nil {\n"
               "\t\tf.formal = make(map[NormalizedName]*Flag)\n\t}\n"
               "\tf.formal[f.normalizeFlagName(name)] = flag\n\treturn flag\n}\n",
    "string.go": "package flags\n\n// -- string Value\ntype stringValue string\n\n"
                 "func newStringValue(val string, p *string) *stringValue {\n\t*p = val\n"
                 "\treturn (*stringValue)(p)\n}\n\n"
                 "func (s *stringValue) Set(val string) error {\n\t*s = stringValue(val)\n\treturn nil\n}\n\n"
                 "func (s *stringValue) Type() string { return \"string\" }\n\n"
                 "func (s *stringValue) String() string { return string(*s) }\n",
    "string_slice.go": "package flags\n\nimport \"strings\"\n\n// -- stringSlice Value\n"
                       "type stringSliceValue struct {\n\tvalue   *[]string\n\tchanged bool\n}\n\n"
                       "func (s *stringSliceValue) Set(val string) error {\n\t*s.value = strings.Split(val, \",\")\n"
                       "\treturn nil\n}\n\nfunc (s *stringSliceValue) Type() string { return \"stringSlice\" }\n\n"
                       "func (s *stringSliceValue) String() string { return strings.Join(*s.value, \",\") }\n\n"
                       "func (s *stringSliceValue) Append(val string) error {\n"
                       "\t*s.value = append(*s.value, val)\n\treturn nil\n}\n\n"
                       "func (s *stringSliceValue) Replace(val []string) error {\n\t*s.value = val\n\treturn nil\n}\n\n"
                       "func (s *stringSliceValue) GetSlice() []string { return *s.value }\n",
    "count.go": "package flags\n\n// -- count Value: no String method, so not a Value\ntype countValue int\n\n"
                "func (i *countValue) Set(s string) error { *i++; return nil }\n\n"
                "func (i *countValue) Type() string { return \"count\" }\n\n"
                "// -- pair: Set takes two arguments, so not a Value either\ntype pairValue struct{ k, v string }\n\n"
                "func (p *pairValue) Set(k, v string) error { p.k, p.v = k, v; return nil }\n\n"
                "func (p *pairValue) Type() string { return \"pair\" }\n\n"
                "func (p *pairValue) String() string { return p.k + \"=\" + p.v }\n",
    "internal/parse/parse.go": "package parse\n\n// Parser splits command lines.\ntype Parser struct{ args []string }\n\n"
                               "// New returns an empty Parser.\nfunc New() *Parser { return &Parser{} }\n",
    "internal/legacy/legacy.go": "package legacy\n\n// New is the old entry point, kept for callers of v1.\n"
                                 "func New() int { return 1 }\n",
    "cmd/app/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\tf \"github.com/acme/flags\"\n"
                       "\tp \"github.com/acme/flags/internal/parse\"\n)\n\n"
                       "func lookup(set *f.FlagSet, name string) f.NormalizedName {\n\tvar v f.Value\n"
                       "\tfmt.Println(set, v)\n\treturn f.NormalizedName(name)\n}\n\n"
                       "func main() {\n\tparser := p.New()\n\tfmt.Println(parser, lookup(nil, \"x\"))\n}\n",
}


@pytest.fixture(scope="module")
def flags(tmp_path_factory) -> Snapshot:
    return _index(tmp_path_factory.mktemp("flags"), GO_FILES, "structure/flags")


def _sites(snapshot: Snapshot, op: GraphOp, name: str) -> set[str]:
    result = GraphOps().run_graphs(op, name, [SnapshotGraph.from_snapshot(snapshot)])
    return {site for a in result.answers for site in a.sites}


def test_go_impls_matches_method_sets_by_name_and_arity(flags: Snapshot) -> None:
    # countValue lacks String(); pairValue's Set takes two parameters: neither is a Value
    assert _answers(flags, GraphOp.IMPLS, "Value") == {"stringValue", "stringSliceValue"}
    assert _answers(flags, GraphOp.IMPLS, "SliceValue") == {"stringSliceValue"}  # embeds Value's methods too


def test_go_refs_include_type_positions_and_qualified_uses(flags: Snapshot) -> None:
    lines = {n + 1: text for n, text in enumerate(flags.file_lines("flag.go"))}
    sites = _sites(flags, GraphOp.REFS, "NormalizedName")
    used = {f"flag.go:{n}" for n, text in lines.items() if "NormalizedName" in text
            and not text.startswith(("//", "type NormalizedName"))}
    assert len(used) == 5 and used <= sites  # map key and func field types, a result type, a conversion, make()
    assert {"cmd/app/main.go:10", "cmd/app/main.go:13"} <= sites  # f.NormalizedName: result type, conversion
    assert "cmd/app/main.go:11" in _sites(flags, GraphOp.REFS, "Value")  # var v f.Value
    assert any(site.startswith("flag.go:") and "&Flag{" in lines[int(site.split(":")[1])]
               for site in _sites(flags, GraphOp.REFS, "Flag"))  # a composite literal


def test_go_aliased_imports_resolve_calls_to_the_imported_package(flags: Snapshot) -> None:
    assert _answers(flags, GraphOp.IMPORTS, "cmd/app/main.go") == {"flag.go", "string.go", "string_slice.go",
                                                                   "count.go", "internal/parse/parse.go"}
    result = GraphOps().run_graphs(GraphOp.CALLEES, "main", [SnapshotGraph.from_snapshot(flags)])
    callees = {a.node: a.resolution for a in result.answers}
    assert callees["internal/parse/parse.go::New"] == "import"  # p.New, though legacy has a New too
    assert "internal/legacy/legacy.go::New" not in callees


# -- Rust (a crate whose trait impls live beside and apart from their types) --

RUST_FILES = {
    "Cargo.toml": '[package]\nname = "shapes"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": "pub mod shapes;\nmod impls;\n\nuse std::fmt;\n\n/// Anything with an area.\npub trait Shape {\n"
                  "    /// The area in square units.\n    fn area(&self) -> f64;\n}\n\n"
                  "/// A shape that can also be scaled.\npub trait Scalable: Shape + fmt::Debug {\n"
                  "    fn scale(&mut self, by: f64);\n}\n",
    "src/shapes/mod.rs": "pub mod circle;\npub mod square;\n",
    "src/shapes/circle.rs": "use std::fmt;\n\nuse crate::Shape;\n\n/// A circle by its radius.\n#[derive(Debug, Clone)]\n"
                            "pub struct Circle {\n    pub radius: f64,\n}\n\nimpl Circle {\n"
                            "    pub fn new(radius: f64) -> Self {\n        Circle { radius }\n    }\n}\n\n"
                            "impl Shape for Circle {\n    fn area(&self) -> f64 {\n"
                            "        std::f64::consts::PI * self.radius * self.radius\n    }\n}\n\n"
                            "impl fmt::Display for Circle {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n"
                            "        write!(f, \"circle({})\", self.radius)\n    }\n}\n",
    "src/shapes/square.rs": "/// A square by its side.\n#[derive(Debug)]\npub struct Square {\n    pub side: f64,\n}\n\n"
                            "/// Wraps any shape with a label.\npub struct Labeled<T> {\n    pub label: String,\n"
                            "    pub inner: T,\n}\n",
    "src/impls.rs": "use crate::shapes::square::{Labeled, Square};\nuse crate::{Scalable, Shape};\n\n"
                    "impl Shape for Square {\n    fn area(&self) -> f64 {\n        self.side * self.side\n    }\n}\n\n"
                    "impl Scalable for Square {\n    fn scale(&mut self, by: f64) {\n        self.side *= by;\n    }\n}\n\n"
                    "impl<T: Shape> crate::Shape for Labeled<T> {\n    fn area(&self) -> f64 {\n"
                    "        self.inner.area()\n    }\n}\n\n"
                    "/// Describes any shape.\npub trait Describe {\n    fn describe(&self) -> String;\n}\n\n"
                    "impl<T: Shape> Describe for T {\n    fn describe(&self) -> String {\n"
                    "        format!(\"area {}\", self.area())\n    }\n}\n",
}


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Snapshot:
    return _index(tmp_path_factory.mktemp("shapes"), RUST_FILES, "structure/shapes")


def test_rust_trait_impls_are_implementations(shapes: Snapshot) -> None:
    # in the type's file, in another file, generic with a path to the trait; plus a supertrait
    assert _answers(shapes, GraphOp.IMPLS, "Shape") == {"Circle", "Square", "Labeled", "Scalable"}
    assert _answers(shapes, GraphOp.IMPLS, "Scalable") == {"Square"}
    assert _answers(shapes, GraphOp.IMPLS, "Describe") == set()  # a blanket impl<T> names no type
    graph = SnapshotGraph.from_snapshot(shapes)
    implementers = {a.node for a in GraphOps().run_graphs(GraphOp.IMPLS, "Shape", [graph]).answers}
    assert implementers >= {"src/shapes/square.rs::Square", "src/shapes/circle.rs::Circle"}  # the struct items


# -- doc comments of every language inside their definition's chunk --

JAVA_FILES = {
    "src/main/java/com/acme/ledger/Ledger.java":
        "/*\n * Copyright 2024 Acme. Licensed under the Apache License, Version 2.0.\n */\npackage com.acme.ledger;\n\n"
        "import java.util.ArrayList;\nimport java.util.List;\n\n"
        "/**\n * An append-only ledger of amounts in cents.\n */\n@SuppressWarnings(\"unused\")\n"
        "public class Ledger {\n    private final List<Long> entries = new ArrayList<>();\n\n"
        "    /**\n     * Records one amount.\n     *\n     * @param cents the amount\n     */\n"
        "    @Deprecated\n    public void record(long cents) {\n        entries.add(cents);\n    }\n}\n",
}


def test_doc_comments_sit_in_their_definitions_chunk_in_every_language(tmp_path, flags: Snapshot,
                                                                      shapes: Snapshot) -> None:
    # Go doc above a type (inside `type_declaration`) and above a method
    assert _chunk_of(flags, "flag.go", "Value").content.startswith("// Value is the interface to the dynamic value")
    assert _chunk_of(flags, "flag.go", "FlagSet.VarP").content.startswith("// VarP defines a flag with a value.")
    assert _chunk_of(flags, "flag.go", "NormalizedName").content.startswith(
        "// NormalizedName is a flag name that has been normalized according to rules\n// for the FlagSet")
    # rustdoc with the attributes between it and the item; `//!`-style module docs are not an item's
    circle = _chunk_of(shapes, "src/shapes/circle.rs", "Circle").content
    assert circle.startswith("/// A circle by its radius.\n#[derive(Debug, Clone)]\npub struct Circle {")
    assert _chunk_of(shapes, "src/lib.rs", "Shape").content.startswith("/// Anything with an area.\npub trait Shape")
    # Javadoc above an annotated class and method; the license header stays out
    java = _index(tmp_path, JAVA_FILES, "structure/ledger")
    path = "src/main/java/com/acme/ledger/Ledger.java"
    assert _chunk_of(java, path, "Ledger").content.startswith("/**\n * An append-only ledger")
    assert _chunk_of(java, path, "Ledger.record").content.startswith("    /**\n     * Records one amount.")
    assert not any("Records one amount" in c.content or "append-only" in c.content
                   for c in java.chunks if not c.symbol)
