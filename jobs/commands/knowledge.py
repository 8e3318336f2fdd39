"""`semantica knowledge add|edit|list|show|pin|unpin|retire|review|curate|feedback` (docs/knowledge.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobs.cli import add_common, config_from_args, print_json


def register(sub: argparse._SubParsersAction) -> None:
    knowledge = sub.add_parser("knowledge", help="decisions, rules and facts with a trust score (docs/knowledge.md)",
                               description="Knowledge entries next to the code index: added by people, proposed by "
                                           "agents, found in ADRs and docs at index time; injected first into search "
                                           "contexts when trusted; decayed, re-verified and retired by `curate`.")
    actions = knowledge.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text, description=help_text)
        parser.add_argument("--json", action="store_true", help="print JSON")
        add_common(parser)
        parser.set_defaults(handler=run_knowledge)
        return parser

    for name, help_text in (("add", "add an entry (verified against the repository's current snapshot)"),
                            ("edit", "edit an entry (the old version is kept)")):
        parser = action(name, help_text)
        if name == "edit":
            parser.add_argument("id")
        parser.add_argument("--repo", default="", help="the repository it is about ('' = the global store)")
        parser.add_argument("--title", required=name == "add")
        parser.add_argument("--text", required=name == "add", help="the claim; '-' reads it from stdin")
        parser.add_argument("--kind", help="decision | rule | fact | how-to (default fact)")
        parser.add_argument("--path", action="append", dest="paths", help="a path or glob it is about (repeatable)")
        parser.add_argument("--symbol", action="append", dest="symbols", help="a symbol it is about (repeatable)")
        parser.add_argument("--source", dest="source_kind", help="person | adr | doc | agent (default person)")
        parser.add_argument("--source-ref", help="who or what said it: a name, a file, an agent's query")
        parser.add_argument("--evidence", action="append", help="a commit, test id or benchmark file (repeatable)")
        parser.add_argument("--why", default="", help="(edit) why it changed")
    listing = action("list", "list entries, most trusted first")
    listing.add_argument("--repo", action="append", help="only this repository's store (repeatable; '' = global)")
    listing.add_argument("--status", action="append", help="candidate | active | review | retired (repeatable)")
    listing.add_argument("--query", default="", help="full-text search")
    listing.add_argument("--limit", type=int, default=100)
    show = action("show", "one entry with its trust signals and history")
    show.add_argument("id")
    for name in ("pin", "unpin"):
        action(name, f"{name} an entry (a pin adds 0.30 to its trust)").add_argument("id")
    retire = action("retire", "retire an entry (it stays readable with the reason)")
    retire.add_argument("id")
    retire.add_argument("--reason", required=True)
    review = action("review", "list the review queue (conflicts, candidates), or settle one entry")
    review.add_argument("id", nargs="?")
    decision = review.add_mutually_exclusive_group()
    decision.add_argument("--keep", action="store_true", help="make it active; the entries it contradicts retire")
    decision.add_argument("--reject", action="store_true", help="retire it")
    review.add_argument("--reason", default="")
    review.add_argument("--reviewer", default="", help="who decides (default: the login name); recorded on the entry")
    curate = action("curate", "decay, re-verify, promote, review and retire; writes a JSON report")
    curate.add_argument("--repo", action="append", help="only this repository (repeatable)")
    curate.add_argument("--report-dir", help="where the JSON report goes (default <knowledge dir>/reports)")
    feedback = action("feedback", "vote on entries an answer used")
    feedback.add_argument("ids", nargs="+")
    feedback.add_argument("--rating", type=float, help="> 0 up (default), <= 0 down")


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        raise ValueError("review ID needs --reviewer NAME (no login name to record)") from None


def _voter() -> str:
    try:
        return _login()
    except ValueError:
        return "anonymous"


def _text(value: str | None) -> str | None:
    return sys.stdin.read() if value == "-" else value


def run_knowledge(args: argparse.Namespace) -> int:
    from serving.knowledge.curator import REPORTS_DIR, Curator
    from serving.knowledge.entry import Status
    from serving.knowledge.service import KnowledgeService
    from serving.knowledge.store import knowledge_dir

    config = config_from_args(args)
    service = KnowledgeService(config)
    a = args.action
    if a in ("add", "edit"):
        fields = {k: v for k, v in {"title": args.title, "text": _text(args.text), "kind": args.kind,
                                    "paths": args.paths, "symbols": args.symbols, "source_kind": args.source_kind,
                                    "source_ref": args.source_ref, "evidence": args.evidence}.items() if v is not None}
        result = (service.add(args.repo, fields, actor="cli") if a == "add"
                  else service.edit(args.id, fields, actor="cli", why=args.why))
        out = result.to_dict()
    elif a == "list":
        statuses = tuple(Status.parse(s) for s in args.status or [])
        entries = service.list(args.repo, statuses, args.query, args.limit)
        out = [e.to_dict() for e in entries]
        if not args.json:
            for e in entries:
                print(f"{e.id}  {e.trust:.3f}  {e.status:<9} {e.kind:<8} {e.repo or '(global)'}: {e.title}")
            return 0
    elif a == "show":
        out = service.show(args.id)
    elif a in ("pin", "unpin"):
        out = service.pin(args.id, a == "pin", actor="cli").to_dict()
    elif a == "retire":
        out = service.retire(args.id, args.reason, actor="cli").to_dict()
    elif a == "review":
        if args.id is None:
            queue = service.review_queue()
            out = [e.to_dict() for e in queue]
            if not args.json:
                for e in queue:
                    partners = f" contradicts {', '.join(e.conflicts_with)}" if e.conflicts_with else ""
                    print(f"{e.id}  {e.status:<9} {e.trust:.3f} {e.repo or '(global)'}: {e.title}{partners}")
                return 0
        else:
            if not (args.keep or args.reject):
                raise ValueError("review ID needs --keep or --reject")
            out = service.resolve(args.id, args.keep, args.reason, actor=args.reviewer or _login()).to_dict()
    elif a == "curate":
        report_dir = Path(args.report_dir) if args.report_dir else knowledge_dir(config) / REPORTS_DIR
        report = Curator(service).run(args.repo, report_dir)
        out = report.to_dict()
        if not args.json:
            for change in report.changes:
                print(f"{change.id} {change.change:<11} {change.trust_before:.3f} -> {change.trust_after:.3f}  "
                      f"{change.title}: {change.why}")
            print(f"curated {len(report.repos)} store(s) in {report.seconds * 1000:.0f} ms; report {report.path}")
            return 0
    else:  # feedback
        out = {"moved": service.feedback(args.ids, args.rating, voter=f"cli:{_voter()}")}
    if args.json:
        print_json(out)
    else:
        _print(out)
    return 0


def _print(out: object) -> None:
    import json

    print(json.dumps(out, indent=1, ensure_ascii=False, default=str))
