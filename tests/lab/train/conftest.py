"""The product training tests' fixtures (a tiny BERT, docstring pairs, a small real repository), shared with the
training studies' tests."""

from tests.jobs.train.conftest import pairs_dir, tiny_bert  # noqa: F401 (pytest fixtures)
from tests.jobs.train.test_pairs import shop  # noqa: F401 (pytest fixture)
