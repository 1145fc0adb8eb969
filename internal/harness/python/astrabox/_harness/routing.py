"""Routing: every observation goes to the reply of the call that made it, or to a ``background`` message.

The call in flight lives in :data:`CURRENT_CALL`, a ``ContextVar`` that asyncio propagates into tasks and
handles (and the harness into threads and executor jobs, see :mod:`astrabox._harness.leftovers`). An
observation made by a call that has already returned is marked ``after_return`` and travels in a
``background`` message, as does one made outside any call.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Callable, Optional, Set

from astrabox._harness.records import Observations

#: The call in flight in this thread or task (``None`` outside any call).
CURRENT_CALL: "contextvars.ContextVar[Optional[int]]" = contextvars.ContextVar("astrabox_call", default=None)

#: Where the provider's code submitted the executor job running in this thread (a ``sources.Location``), for
#: what library code does on the executor's thread with no provider frame on its stack (asyncio resolves
#: names there).
SUBMITTED_AT: "contextvars.ContextVar[Optional[Any]]" = contextvars.ContextVar("astrabox_submitted_at", default=None)


class Quiet:
    """``with`` block of the harness's own work in one thread (see :meth:`Router.quiet`): a plain class, not a
    generator-based context manager, since every call enters several."""

    __slots__ = ("_local", "_prev")

    def __init__(self, local: threading.local) -> None:
        self._local = local
        self._prev = False

    def __enter__(self) -> None:
        self._prev = getattr(self._local, "busy", False)
        self._local.busy = True

    def __exit__(self, *exc: Any) -> None:
        self._local.busy = self._prev


class Router:
    """The reply bucket of the call in flight, the background bucket, and the harness's own-work flag."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # re-entrant: a signal handler may log while it is held
        self._local = threading.local()
        self.current = Observations()
        self.background = Observations()
        self.in_flight: Optional[int] = None
        self.returned: Set[int] = set()
        #: Called (outside the lock) when a background observation arrives while no call is in flight.
        self.notify: Optional[Callable[[], None]] = None

    # -- the harness's own work ------------------------------------------------------------------------

    def busy(self) -> bool:
        """Whether this thread is doing the harness's own work (or already recording an observation)."""
        return getattr(self._local, "busy", False)

    def quiet(self) -> "Quiet":
        """The harness's own work in this thread: record nothing it causes (``with router.quiet(): ...``)."""
        return Quiet(self._local)

    def guarded(self, fn: Callable[..., None], *args: Any) -> None:
        """Run an observation source, unless this thread is busy; it never raises into the provider."""
        if getattr(self._local, "busy", False):
            return
        self._local.busy = True
        try:
            fn(*args)
        except BaseException:  # noqa: B036 - an observation must never break the provider
            pass
        finally:
            self._local.busy = False

    # -- routing ---------------------------------------------------------------------------------------

    def record(self, entry: Any) -> None:
        """Tag a log, warning or audit record with its call and put it where it belongs."""
        call = CURRENT_CALL.get()
        notify = None
        with self.lock:
            after = call is not None and call in self.returned
            entry.call = call
            entry.after_return = after
            if call is not None and call == self.in_flight and not after:
                self.current.add(entry)
            else:
                self.background.add(entry)
                if self.in_flight is None:
                    notify = self.notify
        if notify is not None:
            notify()

    def begin_call(self, call_id: int) -> None:
        with self.lock:
            self.in_flight = call_id
            self.current = Observations()

    def mark_returned(self, call_id: int) -> None:
        with self.lock:
            self.returned.add(call_id)

    def take_current(self) -> Observations:
        """The observations of the call in flight (its leftovers are the caller's to add)."""
        with self.lock:
            out = self.current
            self.current = Observations()
            return out

    def end_call(self) -> bool:
        """Mark the harness idle; True when background observations are waiting (one recorded after the reply
        was built but before this point did not notify, since a call was still in flight)."""
        with self.lock:
            self.in_flight = None
            return not self.background.empty()

    def take_background(self) -> Optional[Observations]:
        """The background observations waiting, or ``None``."""
        with self.lock:
            if self.background.empty():
                return None
            out = self.background
            self.background = Observations()
        return out
