"""Admission control for one ingress replica: bounded concurrency, a bounded queue, a deadline, a drain.

A request takes a slot when one is free, waits in the queue when the queue has room (no longer than its
deadline), and is refused with 503 + Retry-After otherwise: under overload the server sheds load instead
of letting latency grow without bound. A request still running at its deadline gets 504; its slot stays
taken until the work really ends (a thread cannot be interrupted), so the concurrency bound stays true.
`begin_drain` (SIGTERM) refuses new requests; `drain` waits for the in-flight ones up to the drain
timeout, then cuts off those still running: each gets 503 + Retry-After (reason `drain_timeout`) before
Serve stops, instead of a connection reset, so its client knows to retry elsewhere.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from semantica.config import AdmissionConfig
from serving.api.http.errors import DeadlineExceeded, Overloaded, api_error_response

IDLE_POLL_S = 0.01
"""How often a queued request or a drain looks again (admission is per replica, so this stays cheap)."""
CUT_OFF_POLL_S = 0.05
"""How often a running request checks for a drain cut-off (a flag read: one wake-up per request)."""


class ShedReason:
    QUEUE_FULL = "queue_full"
    QUEUE_TIMEOUT = "queue_timeout"
    DRAINING = "draining"
    DEADLINE = "deadline"
    DRAIN_TIMEOUT = "drain_timeout"


class AdmissionController:
    """Counts running and queued requests; thread-safe, so it does not care which event loop asks."""

    def __init__(self, config: AdmissionConfig) -> None:
        if config.max_concurrent < 1 or config.max_queued < 0 or config.deadline_s <= 0:
            raise ValueError("admission: max_concurrent >= 1, max_queued >= 0 and deadline_s > 0 are required")
        self.config = config
        self.active = 0
        self.queued = 0
        self.draining = False
        self.cut_off = False  # the drain timed out: requests still waiting for their answer get 503 now
        self.waiting = 0  # requests not yet answered in full (what a cut-off still waits for)
        self._lock = threading.Lock()

    @property
    def retry_after(self) -> dict[str, str]:
        return {"Retry-After": str(self.config.retry_after_s)}

    def _try_take(self, queued: bool) -> bool:
        with self._lock:
            if self.active < self.config.max_concurrent:
                self.active += 1
                if queued:
                    self.queued -= 1
                return True
            return False

    async def acquire(self, deadline: float) -> None:
        """Take a slot before `deadline` (time.monotonic) or raise `Overloaded` (503)."""
        if self.draining:
            raise Overloaded("the server is shutting down; retry on another replica",
                              {**self.retry_after, "Connection": "close"}, reason=ShedReason.DRAINING)
        if self._try_take(queued=False):
            return
        with self._lock:
            if self.queued >= self.config.max_queued:
                raise Overloaded(f"the server is at capacity ({self.config.max_concurrent} running, "
                                 f"{self.config.max_queued} queued); retry later", self.retry_after,
                                 reason=ShedReason.QUEUE_FULL)
            self.queued += 1
        while time.monotonic() < deadline:
            await asyncio.sleep(IDLE_POLL_S)
            if self._try_take(queued=True):
                return
        with self._lock:
            self.queued -= 1
        raise Overloaded(f"no capacity within the {self.config.deadline_s}s deadline; retry later",
                         self.retry_after, reason=ShedReason.QUEUE_TIMEOUT)

    def release(self) -> None:
        with self._lock:
            self.active -= 1

    def enter_wait(self) -> None:
        with self._lock:
            self.waiting += 1

    def leave_wait(self) -> None:
        with self._lock:
            self.waiting -= 1

    def begin_drain(self) -> None:
        self.draining = True

    async def wait_idle(self, timeout_s: float) -> bool:
        """True when nothing is running or queued any more, False when `timeout_s` ran out first."""
        end = time.monotonic() + timeout_s
        while self.active or self.queued:
            if time.monotonic() >= end:
                return False
            await asyncio.sleep(IDLE_POLL_S)
        return True

    async def drain(self, timeout_s: float) -> dict[str, Any]:
        """Refuse new requests, wait up to `timeout_s` for the in-flight ones, then cut off the rest.

        A cut-off request is answered 503 `drain_timeout` (its work may still finish in its thread, but
        nothing waits for it); `cut` counts them, so the shutdown log says how many clients must retry."""
        self.begin_drain()
        drained = await self.wait_idle(timeout_s)
        cut = 0
        if not drained:
            with self._lock:
                cut = self.waiting
                self.cut_off = True
            end = time.monotonic() + self.config.drain_cutoff_s
            while self.waiting and time.monotonic() < end:
                await asyncio.sleep(IDLE_POLL_S)
        return {"drained": drained, "cut": cut, **self.snapshot()}

    def snapshot(self) -> dict[str, Any]:
        return {"active": self.active, "queued": self.queued, "draining": self.draining,
                "max_concurrent": self.config.max_concurrent, "max_queued": self.config.max_queued}


class AdmissionMiddleware:
    """ASGI: every request not in `exempt` goes through the controller and its deadline (`deadlines`: a
    path's own bound, e.g. a plan's; it still takes a slot like any request)."""

    def __init__(self, app: Any, controller: AdmissionController, exempt: tuple[str, ...],
                 on_shed: Callable[[str], None] | None = None,
                 deadlines: dict[str, tuple[float, str]] | None = None) -> None:
        self.app, self.controller, self.exempt = app, controller, exempt
        self.deadlines = deadlines or {}  # path -> (its own deadline in s, the setting's name)
        self.on_shed = on_shed or (lambda reason: None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        limit, _ = self._limit(scope)
        deadline = time.monotonic() + limit
        try:
            await self.controller.acquire(deadline)
        except Overloaded as exc:
            self.on_shed(exc.error_fields.get("reason", ShedReason.QUEUE_FULL))
            await api_error_response(exc)(scope, receive, send)
            return
        state = {"started": False, "abandoned": False}

        async def guarded_send(message: dict[str, Any]) -> None:
            if state["abandoned"]:
                return  # the client already has its 504
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, guarded_send))
        task.add_done_callback(lambda _: self.controller.release())
        self.controller.enter_wait()
        try:
            finished = await self._wait(task, deadline, state)
            if finished:
                await task
                return
            state["abandoned"] = True
            task.add_done_callback(_consume)
            await api_error_response(self._cut_short(*self._limit(scope)))(scope, receive, send)
        finally:
            self.controller.leave_wait()

    def _limit(self, scope: dict[str, Any]) -> tuple[float, str]:
        """The request's deadline in seconds and the setting that names it (a path's own, else admission's)."""
        return self.deadlines.get(scope["path"], (self.controller.config.deadline_s, "admission.deadline_s"))

    async def _wait(self, task: asyncio.Future, deadline: float, state: dict[str, bool]) -> bool:
        """Wait for `task` until `deadline` or a drain cut-off; True when it finished or began its answer."""
        while True:
            remaining = deadline - time.monotonic()
            done, _ = await asyncio.wait({task}, timeout=max(0.0, min(remaining, CUT_OFF_POLL_S)))
            if done or state["started"]:
                return True
            if remaining <= 0 or self.controller.cut_off:
                return False

    def _cut_short(self, limit: float, setting: str) -> Exception:
        """The error for a request that did not finish: 503 when a drain cut it off, else 504 (deadline)."""
        config = self.controller.config
        if self.controller.cut_off:
            self.on_shed(ShedReason.DRAIN_TIMEOUT)
            return Overloaded(f"the server shut down before this request finished (admission.drain_timeout_s="
                              f"{config.drain_timeout_s}s); retry on another replica",
                              {**self.controller.retry_after, "Connection": "close"}, reason=ShedReason.DRAIN_TIMEOUT)
        self.on_shed(ShedReason.DEADLINE)
        return DeadlineExceeded(f"the request did not finish within {setting}={limit}s", self.controller.retry_after)


def _consume(task: asyncio.Future) -> None:
    """Retrieve an abandoned request's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
