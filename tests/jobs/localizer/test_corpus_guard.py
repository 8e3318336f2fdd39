"""The learned localizer's corpus: never a SWE-bench or Multi-SWE-bench repository; issue-like commits of every parsed
language labelled at the parent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs.localizer.corpus import CorpusError, CorpusMiner, check_corpus, is_benchmark_repo, load_corpus
from semantica.config import LocalizerCorpusConfig
from semantica.languages import is_test_path, language_of
from semantica.languages.spans import spans_language
from tests.dated_git import commit

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "bench" / "corpus"
# Spelled out here on purpose: weakening the constants in jobs/localizer/corpus.py must not weaken the guard.
SWE_BENCH_PROJECTS = {"astropy", "django", "matplotlib", "seaborn", "flask", "requests", "xarray", "pylint",
                      "pytest", "scikit-learn", "sphinx", "sympy"}
SWE_BENCH_OWNERS = {"astropy", "django", "matplotlib", "mwaskom", "pydata", "pylint-dev", "pytest-dev",
                    "scikit-learn", "sphinx-doc", "sympy"}
MULTI_SWE_BENCH = {
    "alibaba/fastjson2", "apache/dubbo", "elastic/logstash", "fasterxml/jackson-core", "fasterxml/jackson-databind",
    "fasterxml/jackson-dataformat-xml", "google/gson", "googlecontainertools/jib", "mockito/mockito",
    "anuraghazra/github-readme-stats", "axios/axios", "expressjs/express", "iamkun/dayjs", "Kong/insomnia",
    "sveltejs/svelte", "darkreader/darkreader", "mui/material-ui", "vuejs/core", "cli/cli", "grpc/grpc-go",
    "zeromicro/go-zero", "BurntSushi/ripgrep", "clap-rs/clap", "nushell/nushell", "rayon-rs/rayon", "serde-rs/serde",
    "sharkdp/bat", "sharkdp/fd", "tokio-rs/bytes", "tokio-rs/tokio", "tokio-rs/tracing", "facebook/zstd", "jqlang/jq",
    "ponylang/ponyc", "catchorg/Catch2", "fmtlib/fmt", "nlohmann/json", "simdjson/simdjson", "yhirose/cpp-httplib"}
LANGUAGE_FAMILIES = {"go": "go", "java": "java", "rust": "rust", "javascript": "js", "typescript": "js", "tsx": "js"}
POLYGLOT_MIN_REPOS = 10  # per family: Go, Java, JavaScript/TypeScript, Rust


def _corpus_repos() -> set[str]:
    repos = {line.strip() for line in (CORPUS / "REPOS.txt").read_text().splitlines() if line.strip()}
    for file in CORPUS.glob("*.jsonl"):
        with file.open() as fh:
            repos.update(json.loads(line)["repo"] for line in fh if line.strip())
        repos.add(file.stem.replace("+", "/"))
    return repos


def test_committed_corpus_holds_no_swebench_repository_or_organisation():
    repos = _corpus_repos()
    assert len(repos) >= 40, f"the corpus lists {len(repos)} repositories"
    for repo in sorted(repos):
        owner, _, name = repo.lower().partition("/")
        assert name not in SWE_BENCH_PROJECTS and owner not in SWE_BENCH_PROJECTS, repo
        assert owner not in SWE_BENCH_OWNERS, repo
        assert repo.lower() not in {"psf/requests", "pallets/flask"}, repo
        assert repo.lower() not in {m.lower() for m in MULTI_SWE_BENCH}, repo
    assert check_corpus(sorted(repos))


def test_corpus_holds_ten_repositories_of_each_other_language_family():
    """A repository's family is the language of most of its labelled files."""
    families: dict[str, list[str]] = {}
    for repo, rows in _rows_by_repo().items():
        counts: dict[str, int] = {}
        for row in rows:
            for path in row.files:
                family = LANGUAGE_FAMILIES.get(language_of(path), language_of(path))
                counts[family] = counts.get(family, 0) + 1
        families.setdefault(max(counts, key=counts.__getitem__), []).append(repo)
    for family in ("go", "java", "js", "rust"):
        assert len(families.get(family, [])) >= POLYGLOT_MIN_REPOS, (family, families.get(family))


def _rows_by_repo() -> dict[str, list]:
    out: dict[str, list] = {}
    for row in load_corpus(CORPUS):
        out.setdefault(row.repo, []).append(row)
    return out


def test_committed_corpus_rows_hold_ids_paths_and_messages_only():
    rows = load_corpus(CORPUS)
    assert len(rows) >= 5000, f"{len(rows)} labelled commits"
    for row in rows[:: max(1, len(rows) // 1000)]:
        assert len(row.sha) == 40 and len(row.parent) == 40 and row.files
        assert all(spans_language(f) and not is_test_path(f) for f in row.files), row.files
        assert all("::" in f and f.split("::", 1)[0] in row.files for f in row.functions)
        assert "\n    def " not in row.query or len(row.query) <= LocalizerCorpusConfig().max_query_chars


@pytest.mark.parametrize("repo", ["psf/requests", "pallets/flask", "pytest-dev/pluggy", "django/channels",
                                  "SymPy/sympy", "sphinx-doc/alabaster", "someone/pylint", "astropy/photutils",
                                  "pydata/xarray", "mwaskom/seaborn", "scikit-learn/scikit-learn",
                                  "matplotlib/mpl-sandbox", "pytest-dev+pytest",
                                  *sorted(MULTI_SWE_BENCH), "ZeroMicro+Go-Zero", "tokio-rs/tokio.git"])
def test_benchmark_repositories_and_their_organisations_are_refused(repo, tmp_path):
    assert is_benchmark_repo(repo)
    with pytest.raises(CorpusError, match="must not train"):
        check_corpus(["pallets/click", repo])
    with pytest.raises(CorpusError, match="must not train"):
        CorpusMiner(LocalizerCorpusConfig(), tmp_path).run(tmp_path, [repo])


@pytest.mark.parametrize("repo", ["pallets/click", "pallets/werkzeug", "psf/black", "encode/httpx", "serde-rs/json",
                                  "tokio-rs/mio", "google/guice", "spf13/cobra", "sindresorhus/ky"])
def test_other_projects_of_shared_owners_are_allowed(repo):
    assert not is_benchmark_repo(repo)


CART = ("class Cart:\n    def total(self):\n        return sum(i.price for i in self.items)\n\n"
        "    def count(self):\n        return len(self.items)\n\n\ndef helper():\n    return 1\n")


def test_miner_keeps_issue_like_commits_and_labels_functions_at_the_parent(tmp_path):
    work = tmp_path / "owner+proj" / "work"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    commit(work, {"src/cart.py": CART, "tests/test_cart.py": "def test(): pass\n"}, "Initial import of the cart module", day=0)
    parent = commit(work, {"src/cart.py": CART + "\n"}, "Tidy", day=1)
    fixed = commit(work, {"src/cart.py": CART.replace("return sum(i.price for i in self.items)",
                                                      "return round(sum(i.price for i in self.items), 2)") + "\n",
                          "tests/test_cart.py": "def test(): assert True\n"},
                   "Round the cart total to cents (#12)\n\nTotals showed float noise.", day=2)
    counted = CART.replace("len(self", "sum(1 for _ in self")
    commit(work, {"src/cart.py": counted}, "Count items in the cart more carefully", day=3)
    commit(work, {"src/cart.py": counted.replace("return 1", "return 2")}, "Fix the helper's return value, fixes #3", day=4,
           author="dependabot[bot] <bot@example.com>")
    commit(work, {"tests/test_cart.py": "def test(): assert 1\n"}, "Only the tests changed here, fixes #4", day=5)
    bare = tmp_path / "owner+proj" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)

    out = tmp_path / "corpus"
    assert CorpusMiner(LocalizerCorpusConfig(), out, log=lambda _: None).run(tmp_path, ["owner/proj"]) == {"owner/proj": 1}
    (row,) = load_corpus(out)
    assert (row.sha, row.parent, row.kind) == (fixed, parent, "squash")
    assert row.files == ["src/cart.py"]  # the test file is not a label
    assert row.functions == ["src/cart.py::Cart.total"]
    assert row.query.startswith("Round the cart total to cents (#12)")


GO_CART = ("package cart\n\ntype Cart struct{ items []int }\n\nfunc (c *Cart) Total() int {\n\tt := 0\n"
           "\tfor _, i := range c.items {\n\t\tt += i\n\t}\n\treturn t\n}\n\nfunc Count(c *Cart) int {\n"
           "\treturn len(c.items)\n}\n")


def test_miner_labels_go_files_and_methods_and_leaves_go_tests_out(tmp_path):
    work = tmp_path / "owner+gocart" / "work"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    commit(work, {"cart/cart.go": GO_CART, "cart/cart_test.go": "package cart\n"}, "Initial import of the cart", day=0)
    parent = commit(work, {"README.md": "cart\n"}, "Describe the cart package", day=1)
    fixed = commit(work, {"cart/cart.go": GO_CART.replace("\t\tt += i\n", "\t\tt += i * 2\n"),
                          "cart/cart_test.go": "package cart\n\n// doubled\n"},
                   "Count every cart item twice in the total (#7)", day=2)
    bare = tmp_path / "owner+gocart" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)

    out = tmp_path / "corpus"
    assert CorpusMiner(LocalizerCorpusConfig(), out, log=lambda _: None).run(tmp_path, ["owner/gocart"]) == \
        {"owner/gocart": 1}
    (row,) = load_corpus(out)
    assert (row.sha, row.parent) == (fixed, parent)
    assert row.files == ["cart/cart.go"]  # cart_test.go is a Go test file
    assert row.functions == ["cart/cart.go::Cart.Total"]


def test_empty_corpus_is_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="no corpus under"):
        load_corpus(tmp_path)


def test_every_shipped_model_trained_on_corpus_repositories_only():
    """Each model under models/ that names its training repositories (meta.json `trained_on`, an encoder's
    train_card.json `repos`) names corpus repositories only: no benchmark repository or organisation."""
    models = ROOT / "models"
    named = {}
    for card in [*models.glob("*/meta.json"), *models.glob("*/train_card.json")]:
        data = json.loads(card.read_text())
        named[card.parent.name] = sorted(data.get("trained_on") or data.get("repos") or {})
    assert {"localizer-history", "encoder-commits-v3"} <= set(named)
    corpus = _corpus_repos()
    for model, repos in named.items():
        assert repos and set(repos) <= corpus, model
        assert check_corpus(repos)
