"""The suite's own layout: pytest imports test modules by basename (rootdir-relative, no packages), so two
test files with one name make the whole collection fail."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_module_basenames_are_unique() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_a_test_server_port_is_free_and_outside_the_ephemeral_range() -> None:
    """Ray's workers and outgoing connections bind ephemeral ports: a test server's port must lie below them."""
    import socket

    from tests.conftest import SERVER_PORTS_LOW, ephemeral_ports_low, free_port

    ephemeral_low = ephemeral_ports_low()
    ports = {free_port() for _ in range(20)}
    assert all(SERVER_PORTS_LOW <= port < ephemeral_low for port in ports)
    assert len(ports) > 1  # drawn, not one fixed port two suites would share
    with socket.socket() as server:
        server.bind(("127.0.0.1", ports.pop()))
