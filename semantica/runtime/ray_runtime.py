"""Starting Ray safely: loopback-only by default, and never in a process that already runs the JVM.

Why a process that runs the JVM must not start Ray (measured, see tests/semantica/runtime/test_ray_runtime.py):
the JVM uses SIGSEGV itself (safepoint polls, implicit null checks) and handles it in its own signal
handler. `ray.init()` installs absl's failure signal handler (and Python's faulthandler) over it, so
the next deliberate SIGSEGV of a Java thread kills the whole process with "Segmentation fault". Lucene
(pyjnius) started first, then Ray, in one pytest process: that was the intermittent `make test` crash.
The other order is safe (a Ray worker that later starts a JVM: the JVM's handler wins). So every Ray
driver in Semantica runs in a fresh child process (`run_in_fresh_process`) or refuses to start.

Why an environment switch for loopback: Ray's own servers (GCS, raylet, workers, dashboard agent) bind
to the node IP, which Ray resolves to the machine's external address; with
`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` it resolves to 127.0.0.1 and every one of them listens on
loopback only. A cluster address (`ray.address`) leaves Ray's networking alone: securing a cluster is
Ray's auth token plus network isolation (see docs/operations.md).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from semantica.config import RayConfig

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_SPAWN = "spawn"
T = TypeVar("T")
_CHILD_EXIT_GRACE_S = 60.0  # ray.shutdown() in the child after it answered


class RayProcessError(RuntimeError):
    """Ray cannot start here (the JVM already runs in this process) or its child process failed."""


def jvm_running() -> bool:
    """True when pyjnius has started a JVM in this process (checked without importing pyjnius)."""
    jnius_config = sys.modules.get("jnius_config")
    return bool(jnius_config is not None and getattr(jnius_config, "vm_running", False))


def use_loopback() -> None:
    """Make a local Ray node bind every server to 127.0.0.1 (env for children, constant if imported)."""
    os.environ[LOOPBACK_ENV] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:  # read at call time by ray._private.services.get_node_ip_address
        constants.ENABLE_RAY_CLUSTER = False


ALL_INTERFACES_PREFIX = "[::]:"
LOOPBACK_HOST = "127.0.0.1"
REPLICA_SETUP_HOOK = "semantica.runtime.ray_runtime.bind_serve_replicas_to_loopback"


def bind_serve_replicas_to_loopback() -> None:
    """Ray worker setup hook of a local node: each Serve replica's inter-deployment gRPC server binds
    127.0.0.1 instead of `[::]` (Ray 2.60 hard-codes `[::]:0` in `ray.serve._private.replica` and
    has no setting for it). Replicas reach each other at the node IP, which is 127.0.0.1 on a local
    node (`use_loopback`), so nothing else changes."""
    from ray.serve._private import replica

    bind = replica.add_port_to_grpc_server
    if getattr(bind, "loopback_only", False):
        return

    def loopback_only(server: Any, address: str) -> int:
        if address.startswith(ALL_INTERFACES_PREFIX):
            address = f"{LOOPBACK_HOST}:{address.removeprefix(ALL_INTERFACES_PREFIX)}"
        return bind(server, address)

    loopback_only.loopback_only = True  # type: ignore[attr-defined]
    replica.add_port_to_grpc_server = loopback_only


def start_ray(config: RayConfig, address: str | None = None, serve: bool = False) -> None:
    """`ray.init` for Semantica: a cluster at `address`, else a local loopback-only node (`serve`: whose
    Serve replicas' gRPC servers bind loopback too; only Serve drivers pay for the hook's import)."""
    if jvm_running():
        raise RayProcessError("Ray cannot start in a process where the JVM (Lucene) already runs: Ray's signal "
                              "handlers would replace the JVM's and crash the process; run Ray in its own "
                              "process (semantica.runtime.ray_runtime.run_in_fresh_process)")
    if not address:
        use_loopback()
    import ray

    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        runtime_env = {"worker_process_setup_hook": REPLICA_SETUP_HOOK} if serve else None
        if serve:  # the node's processes inherit this environment, Serve's controller among them
            os.environ.setdefault(SERVE_PROXY_READY_ENV, f"{config.serve_proxy_ready_s:g}")
        init_local_node(config, runtime_env)


SERVE_PROXY_READY_ENV = "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"
"""How long Serve's controller lets a new HTTP proxy start before it kills it. Ray's 5 s ran out on a loaded
2-core machine: the proxy was killed while `serve.start` waited for it (ActorDiedError: killed by `ray.kill`)."""


RAY_STARTUP_TIMEOUT = "timed out during startup"
"""Ray's message when its raylet did not register with the GCS within Ray's fixed 30 s (busy machine)."""


def init_local_node(config: RayConfig, runtime_env: dict[str, Any] | None) -> None:
    """`ray.init` of a local node, tried `config.startup_attempts` times when Ray's own startup times out.

    Ray 2.60 waits a hard-coded 30 s for its raylet; on a loaded 2-core machine that ran out (the test
    suite beside other CPU-bound work). A failed start leaves the GCS and raylet it spawned running and
    not owned by any Ray handle, so they are killed (by pid: only this process's new children) first."""
    import psutil
    import ray

    me = psutil.Process()
    for attempt in range(1, config.startup_attempts + 1):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            ray.init(num_cpus=config.num_cpus, include_dashboard=False, log_to_driver=False, runtime_env=runtime_env)
            return
        except Exception as exc:
            if RAY_STARTUP_TIMEOUT not in str(exc) or attempt == config.startup_attempts:
                raise
            print(f"ray: node startup timed out (attempt {attempt} of {config.startup_attempts}); retrying",
                  file=sys.stderr)
            ray.shutdown()
            leftovers = [p for p in me.children(recursive=True) if p.pid not in before]
            for process in leftovers:
                process.kill()
            psutil.wait_procs(leftovers, timeout=_CHILD_EXIT_GRACE_S)


def _child(fn: Callable[..., Any], args: tuple[Any, ...], conn: Any) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which re-raises it
        conn.send(("error", (type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        conn.close()


def run_in_fresh_process(fn: Callable[..., T], *args: Any, timeout_s: float | None = None) -> T:
    """`fn(*args)` in a freshly spawned interpreter (no JVM, no inherited signal handlers); its result back.

    `fn` and its arguments and result must pickle. An exception in the child is raised here as a
    RayProcessError carrying its type and message; so is a child that dies or does not answer in time
    (it is then killed, with the Ray node it started).
    """
    ctx = multiprocessing.get_context(_SPAWN)
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(fn, args, send), name="semantica-ray-driver")
    process.start()
    send.close()
    try:
        if not receive.poll(timeout_s):
            raise RayProcessError(f"the Ray driver process did not answer within {timeout_s}s")
        status, payload = receive.recv()
    except EOFError:
        process.join()
        raise RayProcessError(f"the Ray driver process died (exit code {process.exitcode})") from None
    finally:
        receive.close()
        if process.is_alive() and process.exitcode is None:
            process.join(_CHILD_EXIT_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
    if status == "error":
        name, message, _ = payload
        raise RayProcessError(f"{name}: {message}")
    return payload
