"""`mine-pairs --labels` -> `mine-localizer` -> `train-localizer` on two real (tiny) git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import polars as pl

from jobs.cli import main
from semantica.stores.localizer.table import LocalizerTableBuilder
from serving.localizer.stage import LearnedLocalizer, LocalizerModels

TOPICS = ["discount", "currency", "shipping", "invoice", "refund", "coupon", "tax", "receipt", "basket", "loyalty"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def _module(version: dict[str, int]) -> dict[str, str]:
    files = {}
    for n, topic in enumerate(TOPICS):
        body = "".join(f"    value = value + {k}\n" for k in range(version.get(topic, 0)))
        files[f"pkg/{topic}.py"] = (f"def compute_{topic}(value):\n    '''The {topic} of an order.'''\n{body}"
                                    f"    return value\n\n\ndef describe_{topic}():\n    return '{topic} {n}'\n")
    return files


def _make_repo(root: Path, name: str) -> None:
    work = root / f"{name}-work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    version: dict[str, int] = {}
    for rnd in range(3):
        for n, topic in enumerate(TOPICS):
            if rnd or n:
                version[topic] = version.get(topic, 0) + 1  # this commit changes compute_<topic>
            for path, text in _module(version).items():
                (work / path).parent.mkdir(parents=True, exist_ok=True)
                (work / path).write_text(text)
            _git(work, "add", "-A")
            if rnd or n:
                _git(work, "commit", "-qm", f"Fix compute_{topic} rounding of the {topic} total (#{rnd * 10 + n + 1})")
            else:
                _git(work, "commit", "-qm", "Initial import of the order package")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / name / "repo")], check=True)


def labelled_mirrors(tmp_path: Path) -> tuple[Path, Path]:
    """Two real repositories' bare clones (acme/shop, acme/store) and their labelled corpus: (mirrors, corpus)."""
    mirrors, corpus = tmp_path / "mirrors", tmp_path / "corpus"
    mirrors.mkdir()
    for name in ("acme+shop", "acme+store"):
        _make_repo(mirrors, name)
    assert main(["mine-pairs", "--repos-dir", str(mirrors), "--labels", str(corpus),
                 "--repo", "acme/shop", "--repo", "acme/store"]) == 0
    return mirrors, corpus


def test_corpus_features_and_models_end_to_end(tmp_path, capsys):
    mirrors, corpus = labelled_mirrors(tmp_path)
    features, models = tmp_path / "features", tmp_path / "models"
    rows = [json.loads(line) for line in (corpus / "acme+shop.jsonl").read_text().splitlines()]
    assert len(rows) >= 20 and all(r["functions"][0].startswith(r["files"][0] + "::compute_") for r in rows)
    small = ["--set", "localizer_mine.snapshot_every=4"]
    assert main(["mine-localizer", "--corpus", str(corpus), "--repos-dir", str(mirrors), "--out", str(features),
                 *small]) == 0
    queries = pl.read_parquet(features / "acme+shop.queries.parquet")
    assert (queries["staleness"] >= 0).all() and queries["snapshot"].n_unique() > 1
    train = ["train-localizer", "--features", str(features), "--out", str(models), "--folds", "2",
             "--corpus", str(corpus),
             "--report", str(tmp_path / "report.json"), "--set", "localizer_train.num_rounds=20",
             "--set", "localizer_train.min_data_in_leaf=2", "--set", "localizer_train.num_threads=1"]
    assert main(train) == 0
    out = capsys.readouterr().out
    assert "leave-repositories-out" in out and "learned" in out
    report = json.loads((tmp_path / "report.json").read_text())
    files = report["levels"]["files"]
    assert files["learned"]["queries"] > 0 and set(report["corpus"]["repositories"]) == {"acme/shop", "acme/store"}
    card = (models / "MODEL_CARD.md").read_text()
    assert "acme/shop" in card and "leave-repositories-out" in card and "Feature importances" in card
    # held-out metrics by language: a repository's language is that of most of its gold files
    assert report["languages"] == {"acme/shop": "python", "acme/store": "python"}
    assert files["by_language"]["python"]["learned"] == files["learned"]
    assert "### By language" in card and "| python | 2 |" in card
    # each repository was scored by a model that never saw it
    assert sorted(r for fold in report["folds"] for r in fold) == ["acme/shop", "acme/store"]
    fold_models = sorted((models / ".folds").glob("*.txt"))
    stamps = [p.stat().st_mtime_ns for p in fold_models]
    assert main(train) == 0  # resumable: the fold models are reused
    assert [p.stat().st_mtime_ns for p in fold_models] == stamps

    snapshot = LocalizerTableBuilder().build(dict(_module({})))
    ranked = LearnedLocalizer(load_localizer_config(), LocalizerModels(models)).rank(
        snapshot, "compute_refund rounds the refund total wrongly")
    assert ranked.files[0][0] == "pkg/refund.py"
    assert ranked.functions[0][0] == "pkg/refund.py::compute_refund"


def load_localizer_config():
    from semantica.config import load_config

    return load_config(None, [], environ={}).localizer


def test_training_rows_sample_the_tail_without_regard_to_labels():
    from jobs.localizer.train import training_rows

    n = 100
    frame = pl.DataFrame({"qid": [1] * n + [2] * n, "fusion": [float(n - i) for i in range(n)] * 2,
                          "label": [1 if i == 89 else 0 for i in range(n)] + [1 if i == 91 else 0 for i in range(n)]})
    kept = training_rows(frame, depth=30, tail_every=5)
    q1 = kept.filter(pl.col("qid") == 1)
    # top 30 + every 5th below (ranks 35, 40, ..., 100): the tail holds negatives as well as the positive at rank 90
    assert q1.height == 30 + 14 and q1.filter(pl.col("label") == 0).height == 43
    assert kept.filter(pl.col("qid") == 2).height == 0  # its positive (rank 92) was not sampled: nothing to learn
