"""Ray and the JVM never share a process, and a local Ray node listens on loopback only.

The crash this guards against (measured before the fix, /tmp repro in the closing note of issue 9):
Lucene searches in a process, then `ray.init()` in that same process, then more Lucene searches
-> "SIGSEGV received" from Ray's failure signal handler and exit 134/139, every run. The regression
test below runs exactly that sequence, with Ray's driver in its own process as Semantica now does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from semantica.config import RayConfig
from semantica.runtime.ray_runtime import RayProcessError, run_in_fresh_process, start_ray
from tests.conftest import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def failing() -> None:
    raise ValueError("boom in the child")


def test_start_ray_refuses_a_process_running_the_jvm(monkeypatch):
    import types

    monkeypatch.setitem(sys.modules, "jnius_config", types.SimpleNamespace(vm_running=True))
    with pytest.raises(RayProcessError, match="JVM"):
        start_ray(RayConfig())


def test_child_errors_come_back_with_their_message():
    with pytest.raises(RayProcessError, match="ValueError: boom in the child"):
        run_in_fresh_process(failing, timeout_s=120)


def serve_listeners() -> list[list[str]]:
    """In a fresh process: a local node running a two-deployment Serve app (one replica calls the other
    over Serve's inter-deployment gRPC); (process title, address) of every listening socket of Ray's processes."""
    import psutil
    import ray
    from ray import serve

    # Ray's workers import `semantica` from this checkout (the raylet passes the environment on), not from
    # whatever copy the interpreter's site-packages points at
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    start_ray(RayConfig(num_cpus=1), serve=True)
    try:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})

        @serve.deployment(ray_actor_options={"num_cpus": 0.1})
        class Inner:
            def __call__(self, value: int) -> int:
                return value + 1

        @serve.deployment(ray_actor_options={"num_cpus": 0.1})
        class Outer:
            def __init__(self, inner) -> None:  # noqa: ANN001 (a DeploymentHandle)
                self.inner = inner

            async def __call__(self, value: int) -> int:
                return await self.inner.remote(value) * 10

        handle = serve.run(Outer.bind(Inner.bind()), name="loopback", route_prefix=None)
        assert handle.remote(1).result(timeout_s=120) == 20
        me = psutil.Process()
        processes = {p.pid: " ".join(p.cmdline())[:80] for p in me.children(recursive=True)}
        return sorted({(processes.get(c.pid, "driver"), c.laddr.ip) for c in psutil.net_connections("inet")
                       if c.status == psutil.CONN_LISTEN and (c.pid in processes or c.pid == me.pid)})
    finally:
        serve.shutdown()
        ray.shutdown()


@dataclass
class MixedRun:
    """What the Lucene -> Ray Serve -> Lucene script did: its exit status, its stderr's tail, and
    (process title, address) of every listening socket of Ray's processes while the app ran."""

    returncode: int
    stderr: str
    listeners: list[tuple[str, str]]


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> MixedRun:
    """One local Ray node (with a two-deployment Serve app) started between two bursts of Lucene searches in
    one process: both tests below read this run, so the suite starts Ray once for them, not twice."""
    tmp_path = tmp_path_factory.mktemp("lucene-ray")
    script = tmp_path / "mix.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys, tempfile
        from pathlib import Path
        from semantica.config import load_config
        from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter
        from semantica.runtime.ray_runtime import run_in_fresh_process
        from tests.semantica.runtime.test_ray_runtime import serve_listeners

        def main():
            config = load_config(None, [], environ={{}})
            shard = Path(tempfile.mkdtemp(dir={str(tmp_path)!r})) / "shard"
            writer = LuceneShardWriter(shard, config.lucene)
            writer.add([LuceneDoc(f"d{{i}}", f"def func_{{i}}(x): return helper_{{i % 17}}(x)", "a.py", f"func_{{i}}")
                        for i in range(3000)])
            writer.close()
            searcher = LuceneShardSearcher(shard, config.lucene)
            from jnius import autoclass  # after the JVM is configured and started

            system = autoclass("java.lang.System")

            def churn(n):
                for i in range(n):
                    searcher.search(f"helper_{{i % 17}} func_{{i}}", 50)
                    if i % 200 == 0:
                        system.gc()

            churn(2000)
            listeners = run_in_fresh_process(serve_listeners, timeout_s=480)
            churn(10000)  # with Ray's handlers in this process, this died with SIGSEGV every time
            print(json.dumps(listeners))

        if __name__ == "__main__":  # spawn re-imports this file as __mp_main__
            main()
    """))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=540)
    lines = done.stdout.strip().splitlines()
    listeners = [tuple(pair) for pair in json.loads(lines[-1])] if done.returncode == 0 and lines else []
    return MixedRun(done.returncode, done.stderr[-3000:], listeners)


@pytest.mark.ray
@pytest.mark.timeout(600)
def test_lucene_then_ray_then_lucene_does_not_crash_and_ray_binds_loopback(mixed_run):
    assert mixed_run.returncode == 0, mixed_run.stderr
    addresses = {ip for _, ip in mixed_run.listeners}
    assert addresses and addresses <= LOOPBACK, mixed_run.listeners


@pytest.mark.ray
@pytest.mark.timeout(600)
def test_serve_replicas_listen_on_loopback_only(mixed_run):
    """Ray 2.60 binds each Serve replica's inter-deployment gRPC server to `[::]:0`; on a local node the
    worker setup hook rebinds it to 127.0.0.1, and replica-to-replica calls still work."""
    assert mixed_run.returncode == 0, mixed_run.stderr
    replicas = [(title, ip) for title, ip in mixed_run.listeners if "ServeReplica" in title]
    assert replicas, mixed_run.listeners  # the replicas' gRPC servers are among the listeners
    assert {ip for _, ip in mixed_run.listeners} <= LOOPBACK, [x for x in mixed_run.listeners if x[1] not in LOOPBACK]
