"""The long-query study tool: its plain variant gives the product's own lexical lists (so every variant is
compared with what the stage ranks), a noise variant drops only what it names, and the held-out choice reads
only the other repositories."""

from __future__ import annotations

from lab.localizer.long_query import VARIANTS, VariantGenerator, against_baseline, held_out_choice
from semantica.stores.localizer.features import CandidateConfig, CandidateGenerator
from semantica.stores.localizer.table import LocalizerTableBuilder
from tests.lab.localizer.test_rescore import KOA_RESPONSE, KOA_TEST, KOA_TEST_HELPER

# a long koa commit message's shape: prose, a link, a version and a fenced log
LONG_QUERY = """ctx.response.get should read headers case-insensitively (#1392)

See https://github.com/koajs/koa/issues/1391 for the report against koa 2.13.1.

```
TypeError: this.res.getHeader is not a function
```
The response's get() now uses getHeader, and has() checks hasHeader first."""


def _table():  # noqa: ANN202 - a LocalizerTable
    return LocalizerTableBuilder().build({"lib/response.js": KOA_RESPONSE, "test-helpers/context.js": KOA_TEST_HELPER,
                                          "test/response/get.js": KOA_TEST})


def test_the_plain_variant_is_the_generator_s_lists() -> None:
    table = _table()
    config = CandidateConfig()
    plain = VariantGenerator(config).build(table, LONG_QUERY)
    product = CandidateGenerator(config).build(table, LONG_QUERY)
    assert plain.files == product.files and plain.functions == product.functions
    assert (plain.file_fusion == product.file_fusion).all()


def test_the_noise_variant_drops_links_versions_and_fences_only() -> None:
    table = _table()
    plain, quiet = VARIANTS["plain"](table, LONG_QUERY), VARIANTS["no_noise"](table, LONG_QUERY)
    assert {"github", "issues", "typeerror"} <= set(plain) and not {"github", "issues", "typeerror"} & set(quiet)
    assert quiet["getheader"] == 1 and quiet["hasheader"] == plain["hasheader"]


def test_each_repository_is_ranked_by_the_choice_of_the_others() -> None:
    # `better` wins on a and b and loses on c: c is ranked by `better` (chosen on a and b), a and b by `plain` (a
    # tie on the other two, which goes to the baseline), so every held-out query misses its top 5
    ranks = {"plain": {"a1": [6], "b1": [6], "c1": [1]}, "better": {"a1": [1], "b1": [1], "c1": [6]}}
    repo_of = {"a1": "a", "b1": "b", "c1": "c"}
    found = held_out_choice(ranks, repo_of, ["a1", "b1", "c1"])
    assert found["choices"] == {"a": "plain", "b": "plain", "c": "better"}
    assert found["Acc@5"] == 0.0 and found["baseline"]["Acc@5"] == 1 / 3


def test_a_variant_counts_the_repositories_it_lifts_and_lowers() -> None:
    ranks = {"plain": {"a1": [6], "b1": [6], "c1": [1]}, "better": {"a1": [1], "b1": [1], "c1": [6]}}
    found = against_baseline(ranks, {"a1": "a", "b1": "b", "c1": "c"}, ["a1", "b1", "c1"])
    assert found["better"]["Acc@5"] == {"up": 2, "down": 1} and found["plain"]["MRR"] == {"up": 0, "down": 0}
    assert found["better"]["all"]["Acc@5"] == 2 / 3
