"""What the pair miner reads from a bare git repository: function spans, commits and their diffs.

The git readers live in `pipelines.history.gitread` (the history index reads the same commits), the spans in
`semantica.languages.spans`; file text at a
commit is read through `pipelines.discover.RepoSource` (git objects, no checkout), as the indexer reads it.
"""

from pipelines.history.gitread import (  # noqa: F401  (the miner's names)
    ISSUE_REF,
    PR_MERGE,
    TRAILER,
    Commit,
    changed_python_lines,
    first_parent_history,
    git,
)
from semantica.languages.spans import FunctionSpan, function_spans  # noqa: F401  (the miner's names)
