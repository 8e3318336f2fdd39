"""docs/defaults.md states the shipped query defaults and where each came from: conf/default.yaml must agree."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from semantica.config import load_config

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\|\s*`([a-z_.]+)`\s*\|\s*`([^`]*)`\s*\|")


def shipped_rows() -> dict[str, object]:
    """The `| `key` | `value` | ...` rows of the page's "Shipped values" section."""
    text = (ROOT / "docs" / "defaults.md").read_text(encoding="utf-8")
    section = text.split("## Shipped values", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): yaml.safe_load(m.group(2)) for line in section.splitlines() if (m := ROW.match(line))}


def lookup(config: object, dotted: str) -> object:
    value = config
    for part in dotted.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


def test_conf_defaults_equal_the_documented_ones() -> None:
    rows = shipped_rows()
    assert len(rows) >= 5, "the page lists the re-validated settings"
    config = load_config(str(ROOT / "conf" / "default.yaml"), environ={})
    wrong = {key: (want, lookup(config, key)) for key, want in rows.items()
             if (list(lookup(config, key)) if isinstance(want, list) else lookup(config, key)) != want}
    assert not wrong, f"docs/defaults.md and conf/default.yaml disagree (doc, conf): {wrong}"
