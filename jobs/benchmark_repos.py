"""Which repositories are SWE-bench's: never in a training corpus, never training a shipped model.

Dependency-free on purpose: `semantica train-encoder` checks its pairs with it on a GPU machine that has
none of the indexing stack's packages.
"""

from __future__ import annotations

SWEBENCH_PROJECTS = ("astropy", "django", "matplotlib", "seaborn", "flask", "requests", "xarray", "pylint",
                     "pytest", "scikit-learn", "sphinx", "sympy")
"""The twelve SWE-bench repositories' project names: never in a training corpus."""
SWEBENCH_OWNERS = ("astropy", "django", "matplotlib", "mwaskom", "pydata", "pylint-dev", "pytest-dev",
                   "scikit-learn", "sphinx-doc", "sympy", "psf/requests", "pallets/flask")
"""Their owners (organisations), or owner/name where the owner also hosts allowed projects."""
DEV_SPLIT_REPOS = frozenset({"psf/requests", "pallets/flask", "pytest-dev/pytest", "sphinx-doc/sphinx", "sympy/sympy"})
"""The five repositories of the SWE-bench Lite dev split this project measures on."""


def is_benchmark_repo(repo: str) -> bool:
    """True for any SWE-bench repository or a repository of their organisations (case-insensitive, `owner+name`
    and `.git` spellings included)."""
    name = repo.strip().lower().removesuffix(".git").replace("+", "/")
    owner, _, project = name.partition("/")
    if project in SWEBENCH_PROJECTS or owner in SWEBENCH_PROJECTS:
        return True
    return any(name == o or owner == o for o in SWEBENCH_OWNERS)
