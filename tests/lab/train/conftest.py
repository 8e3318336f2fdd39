"""The product training tests' fixtures (a tiny BERT, docstring pairs), shared with the training studies' tests."""

from tests.jobs.train.conftest import pairs_dir, tiny_bert  # noqa: F401 (pytest fixtures)
