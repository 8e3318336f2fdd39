"""`semantica callers|callees|defs|refs|impls|importers|imports NAME`: exact answers from the code graph."""

from __future__ import annotations

import argparse

from jobs.cli import add_common, config_from_args, print_json, print_stale
from serving.graph.structural import GraphOp

_HELP = {
    GraphOp.CALLERS: "functions whose bodies call NAME, cited at the call line",
    GraphOp.CALLEES: "functions NAME calls",
    GraphOp.DEFS: "where NAME is defined",
    GraphOp.REFS: "every use of NAME: calls, references, subclasses",
    GraphOp.IMPLS: "subclasses of a class, or overrides of a method",
    GraphOp.IMPORTERS: "files that import the module NAME",
    GraphOp.IMPORTS: "what the module NAME imports",
}


def register(sub: argparse._SubParsersAction) -> None:
    for op in GraphOp:
        parser = sub.add_parser(op.value, help=_HELP[op], description=f"{_HELP[op]}. NAME is bare (register_hook), "
                                "dotted (Request.register_hook, models.Request) or path::Qual.name; an ambiguous "
                                "NAME is answered for every candidate.")
        parser.add_argument("name", metavar="NAME")
        parser.add_argument("--repo", action="append", default=[], metavar="R",
                            help="restrict to this repository (repeatable; default: all indexed)")
        parser.add_argument("--depth", type=int, default=None,
                            help="transitive hops (default from conf: graph_ops.default_depth)")
        parser.add_argument("--json", action="store_true", help="print the answer as JSON")
        add_common(parser)
        parser.set_defaults(handler=run_graph, op=op.value)


def run_graph(args: argparse.Namespace) -> int:
    from serving.graph.service import GraphRequest, GraphService

    answer = GraphService(config_from_args(args)).run(GraphRequest(args.op, args.name, args.repo, args.depth))
    if args.json:
        print_json(answer)
        return 0
    print(f"{answer['op']} of {answer['name']!r} (depth {answer['depth']}): {len(answer['answers'])} answers "
          f"in {answer['took_ms']:.1f} ms")
    if answer["note"]:
        print(f"note: {answer['note']}")
    print_stale(answer["freshness"])
    for a in answer["answers"]:
        name = a["qualname"] or a["node"]
        target = f"  (for {a['target']})" if answer["ambiguous"] else ""
        also = f"  (also {', '.join(a['sites'][1:])})" if len(a.get("sites", [])) > 1 else ""
        depth = f", depth {a['depth']}" if a["depth"] > 1 else ""
        print(f"  {a['repo']}:{a['citation']}  {name}  [{a['resolution']}{depth}]{target}{also}")
    if answer["unresolved"]:
        print(f"  not in the repository (by name): {', '.join(answer['unresolved'])}")
    return 0
