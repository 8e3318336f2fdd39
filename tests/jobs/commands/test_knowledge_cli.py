"""`semantica knowledge ...` end to end through the CLI entry point (global store; no index needed)."""

from __future__ import annotations

import json

from jobs.cli import main


def _run(capsys, root, *args):
    code = main(["knowledge", *args, "--index-root", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys, root, *args):
    code, out, err = _run(capsys, root, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_knowledge_cli_lifecycle(tmp_path, capsys):
    root = tmp_path / "index"
    rule = _json(capsys, root, "add", "--title", "Ray and the JVM never share a process", "--kind", "rule",
                 "--text", "Ray workers and the Lucene JVM never run in one Python process.")["entry"]
    assert rule["status"] == "active" and rule["verification"] == "unchecked" and rule["repo"] == ""
    clash = _json(capsys, root, "add", "--title", "Ray and the JVM share a process", "--kind", "rule",
                  "--text", "Ray workers and the Lucene JVM run in one Python process.")
    assert clash["conflicts"] == [rule["id"]]
    queue = _json(capsys, root, "review")
    assert {e["id"] for e in queue} == {rule["id"], clash["entry"]["id"]}
    kept = _json(capsys, root, "review", rule["id"], "--keep", "--reason", "segfaults seen")
    assert kept["status"] == "active"
    edited = _json(capsys, root, "edit", rule["id"], "--text", "Ray and pyjnius never share a process.", "--why", "x")
    assert edited["entry"]["version"] > rule["version"]
    assert _json(capsys, root, "pin", rule["id"])["pinned"] is True
    shown = _json(capsys, root, "show", rule["id"])
    assert shown["signals"]["pinned"] and [h["why"] for h in shown["history"]][-1] == "pinned"
    assert shown["history"][0]["entry"]["text"] == "Ray workers and the Lucene JVM never run in one Python process."
    listed = _json(capsys, root, "list", "--query", "pyjnius process", "--status", "active")
    assert [e["id"] for e in listed] == [rule["id"]]
    lost = _json(capsys, root, "show", clash["entry"]["id"])["entry"]
    assert lost["status"] == "retired" and rule["id"] in lost["retire_reason"]
    assert _json(capsys, root, "feedback", rule["id"], "--rating", "-1")["moved"] == [rule["id"]]
    retired = _json(capsys, root, "retire", rule["id"], "--reason", "moved to the design doc")
    assert retired["status"] == "retired" and retired["retire_reason"] == "moved to the design doc"
    report = _json(capsys, root, "curate")
    assert report["report"].endswith(".json") and json.loads(open(report["report"]).read())["repos"]["(global)"]
    code, out, _ = _run(capsys, root, "list")
    assert code == 0 and "retired" in out


def test_knowledge_cli_bad_input_is_one_line(tmp_path, capsys):
    root = tmp_path / "index"
    code, _, err = _run(capsys, root, "add", "--title", "t", "--text", "x" * 9000)
    assert code == 1 and "max_text_chars" in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(capsys, root, "add", "--title", "t", "--text", "ok", "--kind", "opinion")
    assert code == 1 and "unknown kind" in err
    code, _, err = _run(capsys, root, "show", "k-missing")
    assert code == 1 and "no knowledge entry" in err
    code, _, err = _run(capsys, root, "review", "k-missing")
    assert code == 1 and "--keep or --reject" in err
