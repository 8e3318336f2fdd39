"""The build side of history: reading a repository's commits from git, cached by sha
(the stored form lives in `semantica.stores.history`)."""
