"""The warm query daemon under a burst: clients connecting at once all get an answer."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import pytest

from semantica.daemon_protocol import ask
from serving.api.daemon import QueryDaemon
from tests.conftest import make_config

CLIENTS = 16
REQUEST_TIMEOUT_S = 60.0


@pytest.mark.parametrize("overrides", [(), ("daemon.listen_backlog=1",)], ids=["backlog", "connect-retry"])
def test_sixteen_clients_connecting_at_once_all_get_an_answer(tmp_path, overrides):
    """The clients connect while the daemon is not accepting yet (it binds first, then loads), so every
    connection waits in the listen queue: with the conf backlog they all fit; with a backlog of 1 the
    clients retry EAGAIN (`daemon.connect_retry_s`) until the daemon accepts."""
    config = make_config(tmp_path, *overrides)
    with tempfile.TemporaryDirectory(prefix="sd-") as short:  # AF_UNIX paths are short
        socket_path = Path(short) / "d.sock"
        daemon = QueryDaemon(config, socket_path, "burst")
        answers: list[dict] = []
        failures: list[BaseException] = []
        attempted = threading.Barrier(CLIENTS + 1)

        def client() -> None:
            attempted.wait()
            try:
                answers.append(ask(socket_path, {"op": "status"}, REQUEST_TIMEOUT_S, config.daemon.connect_retry_s))
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        attempted.wait()
        time.sleep(0.3)  # every client has connected (or failed) before the daemon accepts
        server = threading.Thread(target=daemon.serve, daemon=True)
        server.start()
        for thread in threads:
            thread.join(REQUEST_TIMEOUT_S)
        daemon.stop()
        server.join(30)
    assert not failures, [repr(f) for f in failures]
    assert len(answers) == CLIENTS and all(a["ok"] for a in answers)
