"""Rerankers: the protocol (base), the registry keyed by name, and the built-in plug-ins."""
