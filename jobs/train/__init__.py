"""Training data for learned retrieval: mining (query, code) pairs from git history and docstrings."""
