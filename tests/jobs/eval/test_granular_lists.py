"""`mine granular` over a real bare git repository at a base commit, and replaying localization with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest

from jobs.eval.granular_lists import INVENTORY, GranularListMiner, load_granular
from jobs.eval.instances import Instance
from jobs.eval.replay import LocalizationReplay
from jobs.ltr.mine import LISTS_DIR, MineError, part_name
from semantica.config import load_config

NO_LEARNED = "localizer.enabled=false"  # these replays are about the granular lists; the localizer reads clones of its own

V1 = {
    "shop/shipping.py": "def parcel_weight(parcel):\n    return parcel.grams / 1000\n\n\n"
                        "def courier_for(parcel):\n    return 'fast' if parcel_weight(parcel) < 2 else 'slow'\n",
    "shop/billing.py": "def invoice_total(lines):\n    return sum(map(amount_of, lines))\n\n\n"
                       "def refund_invoice(invoice):\n    return -invoice_total(invoice.lines)\n",
    "README.md": "# Shop\n\nCouriers and parcels.\n",
}


def _bare_repo(root: Path) -> tuple[Path, str, str]:
    """A bare clone with two commits; the second renames courier_for (so the base commit matters)."""
    work = root / "work"
    work.mkdir(parents=True)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    for path, text in V1.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (work / "shop/shipping.py").write_text(V1["shop/shipping.py"].replace("courier_for", "pick_courier"))
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    second = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    bare = root / "repos" / "acme+shop" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return root / "repos", first, second


def _instance(commit: str, iid: str = "acme__shop-1") -> Instance:
    return Instance(iid, "acme/shop", commit, "Which courier takes a heavy parcel? courier_for picks the wrong one",
                    ["shop/shipping.py"], ["shop/shipping.py::courier_for"])


def _lists(mined: Path, inst: Instance) -> None:
    """Stored chunk lists as `mine swebench` writes them: only the billing file was found by chunks."""
    rows = [("lexical", 1, "c1", "shop/billing.py", "invoice_total", "function"),
            ("vector", 1, "c2", "shop/billing.py", "refund_invoice", "function")]
    frame = pl.DataFrame(rows, schema=["strategy", "rank", "chunk_id", "path", "symbol", "kind"], orient="row")
    (mined / LISTS_DIR).mkdir(parents=True, exist_ok=True)
    frame.write_parquet(mined / LISTS_DIR / part_name(inst.instance_id))


@pytest.fixture(scope="module")
def mined(tmp_path_factory):
    root = tmp_path_factory.mktemp("granular")
    repos, first, second = _bare_repo(root)
    inst = _instance(first)
    out = root / "mined"
    _lists(out, inst)
    config = load_config(None, ["discover.include_globs=[\"*.py\"]"], environ={})
    miner = GranularListMiner(config, repos, out, log=lambda _m: None)
    assert miner.run([inst]) == []
    return out, inst, repos, second, config


def test_lists_read_the_tree_at_the_base_commit(mined):
    out, inst, _, _, _ = mined
    frame = load_granular(out, inst.instance_id)
    files = frame.filter(pl.col("kind") == "file").sort("rank")["key"].to_list()
    functions = frame.filter(pl.col("kind") == "function").sort("rank")["key"].to_list()
    assert files[0] == "shop/shipping.py" and "README.md" not in files  # include_globs as the eval indexes
    assert functions[0] == "shop/shipping.py::courier_for"  # the name at the base commit, not pick_courier
    inventory = frame.filter(pl.col("kind") == INVENTORY)["key"].to_list()
    assert set(inventory) == {"shop/shipping.py::parcel_weight", "shop/shipping.py::courier_for",
                              "shop/billing.py::invoice_total", "shop/billing.py::refund_invoice"}


def test_rerun_skips_written_instances(mined):
    out, inst, repos, _, config = mined
    target = out / "granular" / part_name(inst.instance_id)
    before = target.stat().st_mtime_ns
    assert GranularListMiner(config, repos, out, log=lambda _m: None).run([inst]) == []
    assert target.stat().st_mtime_ns == before


def test_unknown_commit_fails_that_instance_only(mined, tmp_path):
    out, inst, repos, _, config = mined
    bad = _instance("0" * 40, "acme__shop-bad")
    logged: list[str] = []
    assert GranularListMiner(config, repos, out, log=logged.append).run([bad]) == ["acme__shop-bad"]
    assert "not found" in logged[0]


def test_replay_fuses_granular_lists_into_localization(mined):
    out, inst, _, _, _ = mined
    plain = LocalizationReplay(load_config(None, [NO_LEARNED], environ={}), out).predict(inst)
    assert plain.files == ["shop/billing.py"] and "shop/shipping.py::courier_for" not in plain.functions
    fused_config = load_config(None, [NO_LEARNED, "granular.enabled=true", "granular.file_weight=1", "granular.function_weight=1"],
                               environ={})
    fused = LocalizationReplay(fused_config, out).predict(inst)
    assert fused.files[0] == "shop/shipping.py"
    assert fused.functions[0] == "shop/shipping.py::courier_for"


def test_replay_without_granular_lists_says_how_to_make_them(mined, tmp_path):
    out, inst, _, _, _ = mined
    other = tmp_path / "other"
    _lists(other, inst)
    config = load_config(None, [NO_LEARNED, "granular.enabled=true"], environ={})
    with pytest.raises(MineError, match="mine granular"):
        LocalizationReplay(config, other).predict(inst)
