"""Every documented `curl -d` sends what the API reads: a JSON body with `Content-Type: application/json`.
Without the header curl sends form encoding, and the API answers 422 "Input should be a valid dictionary"."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = re.compile(r"(?:^|\s)(?:-d|--data(?:-raw)?)\s")
JSON_TYPE = "content-type: application/json"


def curl_examples() -> list[tuple[str, list[str]]]:
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            text = line.strip().strip("`")
            if text.startswith("curl") and DATA.search(text):
                found.append((f"{page.name}:{number}", shlex.split(text)))
    return found


def test_there_are_curl_examples_with_bodies():
    assert len(curl_examples()) >= 4


@pytest.mark.parametrize("where, argv", curl_examples(), ids=[w for w, _ in curl_examples()])
def test_every_curl_body_is_json_with_its_content_type(where, argv):
    headers = [argv[i + 1].lower() for i, arg in enumerate(argv[:-1]) if arg in ("-H", "--header")]
    bodies = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("-d", "--data", "--data-raw")]
    assert any(h.replace(" ", "") == JSON_TYPE.replace(" ", "") for h in headers), where
    assert bodies and all(isinstance(json.loads(body), dict) for body in bodies), where
