"""Admission control for one ingress replica: bounded concurrency, a bounded queue, a deadline, a drain.

A request takes a slot when one is free, waits in the queue when the queue has room (no longer than its
deadline), and is refused with 503 + Retry-After otherwise: under overload the server sheds load instead
of letting latency grow without bound. A request still running at its deadline gets 504; its slot stays
taken until the work really ends (a thread cannot be interrupted), so the concurrency bound stays true.
`begin_drain` (SIGTERM) refuses new requests; `wait_idle` waits for the in-flight ones.
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


class ShedReason:
    QUEUE_FULL = "queue_full"
    QUEUE_TIMEOUT = "queue_timeout"
    DRAINING = "draining"
    DEADLINE = "deadline"


class AdmissionController:
    """Counts running and queued requests; thread-safe, so it does not care which event loop asks."""

    def __init__(self, config: AdmissionConfig) -> None:
        if config.max_concurrent < 1 or config.max_queued < 0 or config.deadline_s <= 0:
            raise ValueError("admission: max_concurrent >= 1, max_queued >= 0 and deadline_s > 0 are required")
        self.config = config
        self.active = 0
        self.queued = 0
        self.draining = False
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

    def snapshot(self) -> dict[str, Any]:
        return {"active": self.active, "queued": self.queued, "draining": self.draining,
                "max_concurrent": self.config.max_concurrent, "max_queued": self.config.max_queued}


class AdmissionMiddleware:
    """ASGI: every request not in `exempt` goes through the controller and its deadline."""

    def __init__(self, app: Any, controller: AdmissionController, exempt: tuple[str, ...],
                 on_shed: Callable[[str], None] | None = None) -> None:
        self.app, self.controller, self.exempt = app, controller, exempt
        self.on_shed = on_shed or (lambda reason: None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.controller.config.deadline_s
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
        done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - time.monotonic()))
        if task in done or state["started"]:
            await task
            return
        state["abandoned"] = True
        task.add_done_callback(_consume)
        self.on_shed(ShedReason.DEADLINE)
        exc = DeadlineExceeded(f"the request did not finish within admission.deadline_s="
                               f"{self.controller.config.deadline_s}s", self.controller.retry_after)
        await api_error_response(exc)(scope, receive, send)


def _consume(task: asyncio.Future) -> None:
    """Retrieve an abandoned request's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
