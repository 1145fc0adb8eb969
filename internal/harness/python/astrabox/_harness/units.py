"""Units of work: which unit of a call's work issued each request, and which units the callback waited for.

A call's own task is unit 0. Every thread (``threading.Thread``, ``threading.Timer``), executor job
(``ThreadPoolExecutor.submit``, so ``run_in_executor`` and ``asyncio.to_thread`` too) and asyncio task that
code of a call starts is a unit of that call, numbered 1, 2, ... in the order the call started them. Whether
the callback waited for a unit is learnt from the harness's own order of events, never from when the unit's
writes land:

- a thread: a ``join()`` that returned with the thread ended, made by a unit of the same call;
- an executor job: its ``concurrent.futures.Future`` result (or exception) taken by code of the call, or the
  asyncio future chained to it completing normally while something waits on it: a task (its ``_fut_waiter``)
  or a live asyncio combinator (``gather``, ``shield``, ``wait_for``, ``wait``) awaited by the unit that
  submitted the job;
- an asyncio task: it had ended when the callback's own code ended (a task runs on the callback's own loop, so
  it cannot write while the callback is suspended without the loop's turn order showing it).

Each such wait is an edge "unit u was waited for by unit w". When the callback's own code ends, the units
reachable from unit 0 along those edges are the call's *waited units*, sent in the reply. A request to the
double carries ``X-Astrabox-Work: <kind>:<unit>`` (``;after-end`` when the callback's code had already
ended), a loopback connection record the same facts: GEN-CANCEL-CLEAN judges a cancelled callback's write by
whether the unit that issued it was waited for, wherever the write lands.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
import weakref
from typing import Any, Dict, List, Optional, Set, Tuple

from astrabox._harness.routing import CURRENT_CALL

#: Unit kinds, as sent in X-Astrabox-Work and connection records (Go: harness.WorkKind).
OWN, TASK, THREAD, TIMER, JOB, LOOP = "own", "task", "thread", "timer", "job", "loop"

WORK_HEADER = "X-Astrabox-Work"

_COMBINATORS = ("_done_callback", "_inner_done_callback", "_release_waiter", "_on_completion", "_on_task_done")


class Unit:
    """One unit of a call's work: its id within the call, its kind, and the units that waited for it."""

    __slots__ = ("call", "id", "kind", "parent", "waiters", "__weakref__")

    def __init__(self, call: int, uid: int, kind: str, parent: int) -> None:
        self.call = call
        self.id = uid
        self.kind = kind
        self.parent = parent  # the unit that started it
        self.waiters: Set[int] = set()


class Units:
    """The units of every call, the edges of who waited for whom, and the facts requests carry."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._local = threading.local()  # the executor job this thread is running, if any
        self._counters: Dict[int, int] = {}
        self._by_call: Dict[int, Dict[int, Unit]] = {}
        self._own: Dict[int, Any] = {}  # call id -> the call's own task
        self._ended: Set[int] = set()
        self.task_units: "weakref.WeakKeyDictionary[Any, Unit]" = weakref.WeakKeyDictionary()
        self.job_units: "weakref.WeakKeyDictionary[Any, Unit]" = weakref.WeakKeyDictionary()
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.loop_thread: Optional[int] = None

    # -- units ---------------------------------------------------------------------------------------

    def new(self, call: Optional[int], kind: str) -> Optional[Unit]:
        """A new unit of ``call`` started by the current unit (None outside any call)."""
        if call is None:
            return None
        parent = self.current()
        with self._lock:
            n = self._counters.get(call, 0) + 1
            self._counters[call] = n
            unit = Unit(call, n, kind, parent[1] if parent is not None and parent[2] == call else 0)
            self._by_call.setdefault(call, {})[n] = unit
            if len(self._by_call) > 64:  # keep the recent calls only: older ones can no longer be judged
                for old in sorted(self._by_call)[: len(self._by_call) - 64]:
                    self._by_call.pop(old, None)
                    self._counters.pop(old, None)
                    self._own.pop(old, None)
            return unit

    def begin_call(self, call: int, task: Any) -> None:
        """``task`` is ``call``'s own task (unit 0)."""
        with self._lock:
            self._own[call] = task
            unit = self.task_units.pop(task, None)
            if unit is not None:  # the wrapped create_task counted it as a task of the call: it is unit 0
                self._by_call.get(call, {}).pop(unit.id, None)
                self._counters[call] = self._counters.get(call, 1) - 1

    def current(self) -> Optional[Tuple[str, int, int]]:
        """``(kind, unit id, call)`` of the code running now, or None outside any call's work."""
        call = CURRENT_CALL.get()
        if call is None:
            return None
        if threading.get_ident() == self.loop_thread and self.loop is not None:
            try:
                task = asyncio.current_task(self.loop)
            except RuntimeError:
                task = None
            if task is None:
                return LOOP, 0, call  # a loop callback (a timer handle): it runs while the callback is suspended
            with self._lock:
                if self._own.get(call) is task:
                    return OWN, 0, call
            unit = self.task_units.get(task)
            if unit is not None:
                return unit.kind, unit.id, unit.call
            return OWN, 0, call  # a task made before tracking began, or on the call's own task's behalf
        job = getattr(self._local, "job", None)
        if job is not None:
            return job.kind, job.id, job.call
        unit = getattr(threading.current_thread(), "_astrabox_unit", None)
        if isinstance(unit, Unit):
            return unit.kind, unit.id, unit.call
        return None

    def waited(self, unit: Any) -> None:
        """The current code waited for ``unit`` to end (a join, a result taken)."""
        if not isinstance(unit, Unit):
            return
        me = self.current()
        if me is None or me[2] != unit.call or me[1] == unit.id:
            return
        with self._lock:
            unit.waiters.add(me[1])

    # -- the call's end ------------------------------------------------------------------------------

    def end_call(self, call: int) -> List[int]:
        """Mark the callback's own code ended; the ids of the units it waited for, transitively from unit 0."""
        with self._lock:
            if call in self._ended:
                return self._closure(call)
            self._ended.add(call)
            if len(self._ended) > 256:
                self._ended = {c for c in self._ended if c >= call - 128}
            return self._closure(call)

    def track_task(self, task: Any, call: Optional[int]) -> None:
        """``task`` is a unit of ``call``: it counts as waited for when it ends before the callback's code."""
        unit = self.new(call, TASK)
        if unit is None:
            return
        self.task_units[task] = unit
        task.add_done_callback(self._task_done)

    def _task_done(self, task: Any) -> None:
        unit = self.task_units.get(task)
        if unit is None:
            return
        with self._lock:
            if unit.call not in self._ended:
                unit.waiters.add(0)

    def _closure(self, call: int) -> List[int]:
        units = self._by_call.get(call, {})

        reached = {0}
        grew = True
        while grew:
            grew = False
            for unit in units.values():
                if unit.id not in reached and unit.waiters & reached:
                    reached.add(unit.id)
                    grew = True
        reached.discard(0)
        return sorted(reached)

    def tag(self) -> Optional[str]:
        """The X-Astrabox-Work value for a request the current code issues, or None."""
        me = self.current()
        if me is None:
            return None
        value = "%s:%d" % (me[0], me[1])
        with self._lock:
            if me[2] in self._ended:
                value += ";after-end"
        return value

    def issuer(self) -> Optional[Dict[str, Any]]:
        """The same facts for a connection record."""
        me = self.current()
        if me is None:
            return None
        with self._lock:
            return {"kind": me[0], "unit": me[1], "after_end": me[2] in self._ended}

    # -- installing ----------------------------------------------------------------------------------

    def run_job(self, unit: Optional[Unit], ctx: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run an executor job in its context, as its unit (a thread-local, since ``asyncio.to_thread`` runs the
        function in a context of its own)."""
        prev = getattr(self._local, "job", None)
        self._local.job = unit
        try:
            return ctx.run(fn, *args, **kwargs)
        finally:
            self._local.job = prev

    def track_future(self, future: Any, unit: Optional[Unit]) -> None:
        """Learn when code of the call takes the result of a job's future (asyncio's own copy excluded)."""
        if unit is None:
            return
        self.job_units[future] = unit
        units = self
        for name in ("result", "exception"):
            original = getattr(future, name)

            def taken(timeout: Any = None, _original: Any = original) -> Any:
                try:
                    return _original(timeout)
                finally:
                    try:
                        if future.done() and sys._getframe(1).f_code.co_name != "_copy_future_state":
                            units.waited(unit)
                    except BaseException:  # noqa: B036 - never break the provider's wait
                        pass

            setattr(future, name, taken)

    def install(self) -> None:
        """Wrap ``Thread.join`` and asyncio's copy of a job's outcome into its asyncio future."""
        original_join = threading.Thread.join
        units = self

        def join(thread: threading.Thread, timeout: Any = None) -> None:
            original_join(thread, timeout)
            try:
                if not thread.is_alive():
                    units.waited(getattr(thread, "_astrabox_unit", None))
            except BaseException:  # noqa: B036
                pass

        join.__wrapped__ = original_join  # type: ignore[attr-defined]
        threading.Thread.join = join  # type: ignore[method-assign]

        import asyncio.futures as futures

        original_copy = futures._copy_future_state  # type: ignore[attr-defined]

        def copy_future_state(source: Any, dest: Any) -> None:
            try:
                unit = units.job_units.get(source)
                if unit is not None and not source.cancelled() and not dest.cancelled():
                    waiter = units._waiter_of(dest, unit)
                    if waiter is not None:
                        with units._lock:
                            unit.waiters.add(waiter)
            except BaseException:  # noqa: B036
                pass
            return original_copy(source, dest)

        copy_future_state.__wrapped__ = original_copy  # type: ignore[attr-defined]
        futures._copy_future_state = copy_future_state  # type: ignore[attr-defined]

        # A job's asyncio future (run_in_executor, to_thread, wrap_future) is often awaited after it is done
        # (the job finished while the callback awaited something else): a done C future answers that await
        # without a trace, so a job of a call gets a pure-Python future that notes it.
        original_wrap = futures.wrap_future
        job_future = _job_future_class(self)

        def wrap_future(future: Any, *, loop: Any = None) -> Any:
            unit = units.job_units.get(future) if not futures.isfuture(future) else None
            if unit is None:
                return original_wrap(future, loop=loop)
            if loop is None:
                loop = asyncio.get_event_loop()
            new_future = job_future(loop=loop)
            new_future._astrabox_unit = unit
            futures._chain_future(future, new_future)  # type: ignore[attr-defined]
            return new_future

        wrap_future.__wrapped__ = original_wrap  # type: ignore[attr-defined]
        futures.wrap_future = wrap_future  # type: ignore[assignment]
        asyncio.wrap_future = wrap_future  # type: ignore[assignment]

    def _waiter_of(self, fut: Any, unit: Unit) -> Optional[int]:
        """The unit waiting on the asyncio future ``fut`` as it completes, or None when nothing waits."""
        loop = self.loop
        if loop is not None and getattr(fut, "_loop", None) is loop:  # the harness's loop, on its own thread
            for task in asyncio.all_tasks(loop):
                if getattr(task, "_fut_waiter", None) is fut:
                    with self._lock:
                        if self._own.get(unit.call) is task:
                            return 0
                    waiter = self.task_units.get(task)
                    return waiter.id if waiter is not None and waiter.call == unit.call else None
        for entry in list(getattr(fut, "_callbacks", None) or ()):
            fn = entry[0] if isinstance(entry, tuple) else entry
            if _live_combinator(fn, fut):
                return unit.parent
        return None


def _job_future_class(units: Units) -> Any:
    """A pure-Python asyncio future for a job of a call that notes when code of the call takes its outcome:
    an ``await`` that ends (with a result or the job's exception), or ``result()``/``exception()`` called by
    the provider's code or an asyncio combinator (not by the loop waking a task, nor by asyncio copying the
    job's outcome in)."""
    import asyncio.futures as futures

    class JobFuture(futures._PyFuture):  # type: ignore[name-defined,misc]
        _astrabox_unit: Optional[Unit] = None

        def _taken(self) -> None:
            try:
                if self.done() and not self.cancelled():
                    units.waited(self._astrabox_unit)
            except BaseException:  # noqa: B036 - never break the provider's await
                pass

        def __await__(self) -> Any:
            try:
                return (yield from super().__await__())
            finally:
                self._taken()

        __iter__ = __await__

        def result(self) -> Any:
            try:
                return super().result()
            finally:
                if _taken_by_caller():
                    self._taken()

        def exception(self) -> Any:
            try:
                return super().exception()
            finally:
                if _taken_by_caller():
                    self._taken()

    return JobFuture


def _taken_by_caller() -> bool:
    """Whether the caller of a future's result() is code taking the outcome (the provider's, or a combinator in
    asyncio.tasks), not the loop waking a task or asyncio's own plumbing."""
    try:
        module = sys._getframe(2).f_globals.get("__name__", "")
    except (ValueError, AttributeError):
        return False
    return not module.startswith("asyncio.") or module == "asyncio.tasks"


def _live_combinator(fn: Any, fut: Any) -> bool:
    """Whether a done callback is an asyncio combinator's that still waits (its outer future not done)."""
    inner = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(inner, "__module__", "") or ""
    name = getattr(inner, "__name__", "") or ""
    if not module.startswith("asyncio") or name not in _COMBINATORS:
        return False
    related: List[Any] = []
    if isinstance(fn, functools.partial):
        related.extend(fn.args)
    for cell in getattr(inner, "__closure__", None) or ():
        try:
            related.append(cell.cell_contents)
        except ValueError:
            continue
    outers = [o for o in related if isinstance(o, asyncio.Future) and o is not fut]
    return not outers or any(not o.done() for o in outers)
