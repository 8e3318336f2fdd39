"""The one error a wrong configuration raises: its own module, so a section's own checks (`__post_init__`) raise it
without importing the loader that imports them."""

from __future__ import annotations

from semantica.errors import ErrorKind


class ConfigError(ValueError):
    """A configuration value or key is wrong; the message says which and what to do."""

    error_kind = ErrorKind.INVALID
