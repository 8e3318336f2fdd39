"""`make demo`: example queries over the snapshot that `semantica index --repo .` just published."""

from __future__ import annotations

import sys

from semantica.api import SearchRequest
from semantica.config import load_config
from serving.pipeline import SearchPipeline

DEMO_REPO = "semantica/self"
DEMO_QUERIES = (
    "WeightedRRF",
    "who calls _coerce",
    "how are embeddings cached so unchanged chunks are not encoded twice",
    "np.load(segment, allow_pickle=False)",
)
DEMO_K = 3


def main() -> int:
    pipeline = SearchPipeline(load_config())
    for query in DEMO_QUERIES:
        response = pipeline.search(SearchRequest(query, repos=[DEMO_REPO], k=DEMO_K))
        total = sum(response.timings_ms.values())
        print(f"\n$ semantica query {query!r}    [intent {response.intent['dominant']}, {total:.0f} ms]")
        for hit in response.hits:
            print(f"  {hit.rank}. {hit.citation:<40} {hit.symbol or '(module)':<40} score {hit.score:.3f}")
    print("\nTry: semantica query \"your question\" --explain   (semantica --help for more)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
