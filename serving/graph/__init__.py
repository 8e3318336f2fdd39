"""Exact graph answers: structural questions, the graph ops, their routing and the shared entry."""
