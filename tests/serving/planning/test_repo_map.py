"""Repository map: personalised PageRank over a real index's file graph, seeded by the query's names."""

from __future__ import annotations

import pytest

from jobs.cli import main
from semantica.api import QueryError
from semantica.ondisk.layout_errors import UnknownRepoError
from serving.api.mcp.server import SemanticaTools
from serving.pipeline import SearchPipeline
from serving.planning.repo_map import RepoMapService
from tests.conftest import WITHOUT_TOKEN_VECTORS, make_config
from tests.dated_git import one_commit_repo


def test_query_identifiers_seed_the_ranking(planning_repo):
    service = RepoMapService(planning_repo.config)
    seeded = service.run(planning_repo.name, "why does Ledger.record lose amounts", 400)
    assert seeded["seeds"] == {"Ledger.record": ["app/models.py"]}
    assert seeded["files"][0]["path"] == "app/models.py" and seeded["files"][0]["seeded"]
    record = next(s for s in seeded["files"][0]["symbols"] if s["name"] == "Ledger.record")
    assert record["signature"] == "def record(self, amount):" and record["line"] == 7 and record["seeded"]
    assert "app/models.py:\n" in seeded["text"] and "7: (Ledger) def record(self, amount):" in seeded["text"]

    other = service.run(planning_repo.name, "slugify", 400)
    assert other["files"][0]["path"] in {"app/util.py", "app/text.py"}
    assert other["seeds"] == {"slugify": ["app/text.py", "app/util.py"]}


def test_without_a_query_the_depended_on_files_rank_first(planning_repo):
    answer = RepoMapService(planning_repo.config).run(planning_repo.name)
    paths = [f["path"] for f in answer["files"]]
    assert answer["seeds"] == {}
    assert paths[0] == "app/models.py"  # used by service and legacy
    assert paths.index("app/service.py") < paths.index("app/util.py")  # used by api; util by nobody


def test_the_token_budget_bounds_the_map(planning_repo):
    service = RepoMapService(planning_repo.config)
    wide, narrow = service.run(planning_repo.name, "checkout", 400), service.run(planning_repo.name, "checkout", 12)
    assert wide["tokens"] <= 400 and narrow["tokens"] <= 12
    assert len(narrow["files"]) < len(wide["files"]) == wide["total_files"]
    for bad in (0, -3, planning_repo.config.repo_map.max_tokens + 1):
        with pytest.raises(QueryError, match="tokens"):
            service.run(planning_repo.name, "checkout", bad)
    with pytest.raises(UnknownRepoError):
        service.run("acme/nothing")
    with pytest.raises(QueryError, match="repo is empty"):
        service.run(" ")


def test_cli_and_mcp_print_the_map(planning_repo, capsys):
    config = planning_repo.config
    code = main(["map", planning_repo.name, "--query", "handle_request", "--tokens", "200",
                 "--index-root", config.paths.index_root, "--set", f"paths.cache_dir={config.paths.cache_dir}"])
    out = capsys.readouterr().out
    assert code == 0 and "seeds: handle_request -> 1 file(s)" in out and "def handle_request(body):" in out
    assert main(["map", "acme/nothing", "--index-root", config.paths.index_root]) == 1
    assert "acme/nothing" in capsys.readouterr().err

    tools = SemanticaTools(config, SearchPipeline(config))
    assert "repo_map" in [spec.name for spec in tools.specs()]
    answer = tools.repo_map(planning_repo.name, "Ledger", 700)
    assert answer.files[0]["path"] == "app/models.py" and answer.tokens <= 700


def test_http_map_route_answers_and_errors_are_json(planning_repo):
    from tests.serving.local_ingress import client, local_stage_handles, make_core, run

    core = make_core(planning_repo.config, local_stage_handles(planning_repo.config))

    async def post(body):
        async with client(core) as http:
            return await http.post("/v1/map", json=body)

    ok = run(post({"repos": [planning_repo.name], "query": "Ledger.record", "tokens": 200}))
    assert ok.status_code == 200, ok.text
    assert ok.json()["files"][0]["path"] == "app/models.py" and ok.json()["tokens"] <= 200
    only = run(post({"query": "checkout"}))  # no repos: the caller's only repository
    assert only.status_code == 200 and only.json()["repo"] == planning_repo.name
    for body, status in (({"repos": ["acme/nothing"]}, 404), ({"repos": [planning_repo.name], "tokens": "3"}, 422),
                         ({"repos": [planning_repo.name], "tokens": 0}, 400), ({"repos": [], "depth": 2}, 422)):
        answer = run(post(body))
        assert answer.status_code == status, (body, answer.text)
        assert answer.headers["content-type"].startswith("application/json") and answer.json()["message"]


# Definitions under their doc comments, decorators and attributes, one file per parsed language.
DOCUMENTED = {
    "ledger/Ledger.java": "package ledger;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\n"
                         "/**\n * An append-only ledger of amounts in cents.\n */\n@SuppressWarnings(\"unused\")\n"
                         "public class Ledger {\n    private final List<Long> entries = new ArrayList<>();\n\n"
                         "    /**\n     * Records one amount.\n     * @param cents the amount\n     */\n"
                         "    @Deprecated\n    public void record(long cents) {\n        entries.add(cents);\n    }\n\n"
                         "    @Override public String toString() {\n        return entries.toString();\n    }\n\n"
                         "    @SuppressWarnings(value = {\"unchecked\",\n        \"rawtypes\"})\n"
                         "    public long total() {\n        return entries.size();\n    }\n\n"
                         "    @Test(expected = IllegalStateException.class) public void rejectsNegative() {\n"
                         "        record(-1);\n    }\n}\n",
    "cart/cart.go": "package cart\n\n// Cart holds the items of one checkout.\n// It is not safe for concurrent use.\n"
                    "type Cart struct {\n\tItems []int\n}\n\n// Total sums the items' prices.\n"
                    "func (c *Cart) Total() int {\n\tsum := 0\n\tfor _, x := range c.Items {\n\t\tsum += x\n\t}\n"
                    "\treturn sum\n}\n",
    "src/money.rs": "//! Money in cents.\n\n/// An amount in cents.\n///\n/// Never negative.\n#[derive(Debug, Clone, Copy)]\n"
                    "pub struct Money(pub u64);\n\nimpl Money {\n    /// Adds two amounts.\n    #[inline]\n"
                    "    pub fn add(self, other: Money) -> Money {\n        Money(self.0 + other.0)\n    }\n}\n",
    "web/format.ts": "/**\nFormats cents as a price.\n\n@param cents - the amount\n*/\n"
                     "export function formatPrice(cents: number): string {\n\treturn `$${(cents / 100).toFixed(2)}`;\n}\n\n"
                     "/** Options of the checkout form. */\nexport interface CheckoutOptions {\n\tcurrency: string;\n}\n\n"
                     "export class Checkout {\n\t/** Rounds to whole cents. */\n\t#round(cents: number): number {\n"
                     "\t\treturn Math.round(cents);\n\t}\n}\n",
    "tools/report.py": "import functools\n\n\n# Totals per day, cached: the ledger never changes once written.\n"
                       "@functools.lru_cache(maxsize=None)\ndef daily_total(day):\n    return day * 2\n",
}
SIGNATURES = {
    "Ledger": "public class Ledger {", "Ledger.record": "public void record(long cents) {",
    "Ledger.toString": "@Override public String toString() {", "Ledger.total": "public long total() {",
    "Ledger.rejectsNegative": "@Test(expected = IllegalStateException.class) public void rejectsNegative() {",
    "Checkout.#round": "#round(cents: number): number {",
    "Cart": "type Cart struct {", "Cart.Total": "func (c *Cart) Total() int {",
    "Money": "pub struct Money(pub u64);", "Money.add": "pub fn add(self, other: Money) -> Money {",
    "formatPrice": "export function formatPrice(cents: number): string {",
    "CheckoutOptions": "export interface CheckoutOptions {", "daily_total": "def daily_total(day):",
}


def test_the_map_shows_signatures_not_doc_comments_in_every_language(tmp_path):
    from pipelines.indexer import Indexer

    config = make_config(tmp_path, *WITHOUT_TOKEN_VECTORS)
    Indexer(config, progress=False).index(str(one_commit_repo(tmp_path / "repo", DOCUMENTED)), "acme/documented")
    answer = RepoMapService(config).run("acme/documented", "", config.repo_map.max_tokens)
    shown = {s["name"]: s["signature"] for f in answer["files"] for s in f["symbols"]}
    assert {name: shown.get(name) for name in SIGNATURES} == SIGNATURES
