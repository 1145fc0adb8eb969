"""Leftovers and settling: the work a call started (threads, executor jobs, tasks, loop timers, child
processes) and what of it is still running.

``threading.Thread.start`` and ``ThreadPoolExecutor.submit`` are wrapped so that a thread or job carries the
call that started it (and runs in a copy of its context); ``loop.create_task`` on the harness's loop records
the call that created each task. :meth:`Work.leftovers` says what one call left behind when it returned;
:meth:`Work.work_of` says what the work of a set of calls still runs, for ``settle``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Set, Tuple

from astrabox._harness.records import (
    LeftoverChild,
    LeftoverTask,
    LeftoverThread,
    LeftoverTimer,
    Leftovers,
)
from astrabox._harness.routing import CURRENT_CALL, SUBMITTED_AT, Router
from astrabox._harness.sources import code_location, unwrap_job
from astrabox._harness.units import JOB, THREAD, TIMER, Units
from astrabox._harness.values import callable_name, type_name


def child_processes() -> Dict[int, str]:
    """Live (non-zombie) processes whose parent is this process, with their command lines."""
    me = os.getpid()
    out: Dict[int, str] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as fh:
                stat = fh.read()
            rest = stat[stat.rindex(b")") + 2 :].split()
            if int(rest[1]) != me or rest[0] == b"Z":
                continue
            with open("/proc/%s/cmdline" % name, "rb") as fh:
                cmd = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = cmd.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "backslashreplace")[:2048]
    return out


#: How long a leftover child must stay idle before ``settle`` stops waiting for it (Go: ChildIdleWindow).
IDLE_WINDOW = 0.5


def child_activity(pid: int) -> Optional[Tuple[bool, int]]:
    """``(busy, cpu_ticks)`` of a child process, or None when it is gone. It is busy when it runs (or waits on
    a disk), has children of its own or holds a socket: then it may still do work its call must settle. An
    idle one (asleep, no child, no socket) whose CPU time does not move does nothing that could reach a
    service."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            stat = fh.read()
        rest = stat[stat.rindex(b")") + 2 :].split()
        state, ticks = rest[0], int(rest[11]) + int(rest[12])
    except (OSError, ValueError, IndexError):
        return None
    if state not in (b"S", b"T", b"t", b"I"):
        return True, ticks
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid), "rb") as fh:
                if fh.read().strip():
                    return True, ticks
        for fd in os.listdir("/proc/%d/fd" % pid):
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:"):
                return True, ticks
    except OSError:
        return True, ticks  # cannot tell: treat it as work
    return False, ticks


class IdleWatch:
    """Watches the leftover children of a settle: :meth:`all_idle` is true once every child still alive has
    been idle, with unchanged CPU time, for ``IDLE_WINDOW`` seconds."""

    def __init__(self) -> None:
        self._since: Dict[int, Tuple[int, float]] = {}

    def all_idle(self, children: List[LeftoverChild], now: float) -> bool:
        idle = True
        for c in children:
            act = child_activity(c.pid)
            if act is None:
                continue  # gone meanwhile: the next look no longer lists it
            busy, ticks = act
            seen = self._since.get(c.pid)
            if busy:
                self._since.pop(c.pid, None)
                idle = False
            elif seen is None or seen[0] != ticks:
                self._since[c.pid] = (ticks, now)
                idle = False
            elif now - seen[1] < IDLE_WINDOW:
                idle = False
        return idle


class Snapshot(NamedTuple):
    """What was alive before a call started."""

    threads: Set[Any]
    tasks: Set[Any]
    timers: Set[Any]
    children: Set[int]


class Job(NamedTuple):
    """An executor job a call submitted: the call, its future, and the function it really runs."""

    call: int
    future: Any
    fn: Any


#: Where asyncio keeps every task (its weak set, and 3.12's set of eager tasks), once found; False when this
#: version keeps them elsewhere (3.14 keeps native tasks in per-thread lists) and ``asyncio.all_tasks`` is used.
_REGISTRY: Any = None


def _task_registry() -> Any:
    """``(weak set, eager set or None)`` of asyncio's task registry, or False (see :data:`_REGISTRY`).

    ``asyncio.all_tasks`` copies the weak set through a Python-level iterator and filters it, twice per call
    (before and after): the harness's dearest per-call step. A copy of the weak set's own set of references is
    one C-level copy, and the difference after the call is the tasks it created."""
    global _REGISTRY
    if _REGISTRY is None:
        mod = asyncio.tasks
        weak = getattr(mod, "_scheduled_tasks", None)
        if weak is None:
            weak = getattr(mod, "_all_tasks", None)
        eager = getattr(mod, "_eager_tasks", None)
        ok = (sys.version_info < (3, 14) and isinstance(weak, weakref.WeakSet)
              and isinstance(getattr(weak, "data", None), set) and (eager is None or isinstance(eager, set)))
        _REGISTRY = (weak, eager) if ok else False
    return _REGISTRY


def _task_marks(loop: Any) -> Set[Any]:
    """What identifies every task now: references from asyncio's weak set (and eager tasks themselves), or the
    live tasks of ``loop`` when the registry is not where :func:`_task_registry` looks."""
    reg = _task_registry()
    if not reg:
        return set(asyncio.all_tasks(loop))
    weak, eager = reg
    marks = set(weak.data)
    if eager:
        marks.update(eager)
    return marks


def _tasks_since(loop: Any, before: Set[Any]) -> List[Any]:
    """The live tasks of ``loop`` not in ``before`` (made by :func:`_task_marks`)."""
    reg = _task_registry()
    if not reg:
        return [t for t in asyncio.all_tasks(loop) if t not in before]
    weak, eager = reg
    found = [ref() for ref in weak.data - before]
    if eager:
        found.extend(t for t in eager if t not in before)
    out = []
    for t in found:
        if t is None or t.done():
            continue
        try:
            if t.get_loop() is not loop:
                continue
        except Exception:  # noqa: BLE001 - a task type without get_loop cannot be this loop's (all_tasks raises)
            continue
        out.append(t)
    return out


def loop_timers(loop: Any) -> List[Any]:
    """The loop's pending (not cancelled) timer handles (never raises)."""
    try:
        return [h for h in list(getattr(loop, "_scheduled", ())) if not h.cancelled()]
    except BaseException:  # noqa: B036
        return []


def _thread(t: threading.Thread, target: Any) -> LeftoverThread:
    file, line = code_location(target)
    return LeftoverThread(t.name, t.daemon, callable_name(target) if target else None, file, line)


def _job(fn: Any) -> LeftoverThread:
    file, line = code_location(fn)
    return LeftoverThread("executor job", True, callable_name(fn), file, line)


def _task(task: Any, qualified: bool) -> LeftoverTask:
    coro = task.get_coro()
    code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
    qual = getattr(coro, "__qualname__", None) or type_name(type(coro))
    if qualified:
        frame = getattr(coro, "cr_frame", None)
        module = frame.f_globals.get("__name__") if frame is not None else None
        qual = "%s.%s" % (module, qual) if module else qual
    return LeftoverTask(task.get_name(), qual, code.co_filename if code is not None else None,
                        code.co_firstlineno if code is not None else None)


def _callback_file(cb: Any) -> str:
    """The code file of a loop timer's callback (through partials and bound methods), or ""."""
    for _ in range(4):
        if isinstance(cb, functools.partial):
            cb = cb.func
            continue
        func = getattr(cb, "__func__", None)
        if func is not None:
            cb = func
            continue
        break
    code = getattr(cb, "__code__", None)
    return getattr(code, "co_filename", "") or ""


def _is_executor_worker(target: Any) -> bool:
    return callable_name(target) == "concurrent.futures.thread._worker"


class Work:
    """Tracks the work each call starts, and reports what of it is still running."""

    def __init__(self, router: Router, units: Optional[Units] = None) -> None:
        self._router = router
        #: The units of each call's work (see :mod:`~astrabox._harness.units`).
        self.units = units if units is not None else Units()
        self.own_threads: Set[Any] = set()
        self.own_timers: Set[Any] = set()
        #: Whether a code file is a third-party library's (set by the observer): a loop timer whose callback
        #: is a library's own (aiohttp's timeout and keep-alive handles, a pool's idle timer) is that
        #: library's housekeeping, not work the provider left; a write it ever made is still judged when it
        #: lands.
        self.library_file: Callable[[str], bool] = lambda filename: False
        self._jobs: List[Job] = []
        # The call that created each task on the harness's loop, and the child processes each call left.
        self.task_origins: "weakref.WeakKeyDictionary[Any, Optional[int]]" = weakref.WeakKeyDictionary()
        self.children_of: Dict[int, List[int]] = {}
        # Scanning /proc for children costs a file open per process on the machine: only do it once the
        # provider has started a process (an audited spawn) at least once.
        self.spawned = False
        #: Finds the provider's own frame on a stack (set by the observer); executor jobs remember theirs.
        self.locate: Optional[Callable[[Any], Any]] = None

    # -- tracking ----------------------------------------------------------------------------------------

    def install_threads(self) -> None:
        """Wrap ``Thread.start`` and ``ThreadPoolExecutor.submit`` to carry the starting call."""
        original_start = threading.Thread.start
        work = self

        def start(thread: threading.Thread) -> None:
            try:
                ctx = contextvars.copy_context()
                # partial and Context.run are C callables: no harness frame appears in the thread's stack.
                thread.run = functools.partial(ctx.run, thread.run)  # type: ignore[method-assign]
                # The call whose code started the thread (threading.Timer included): settling waits for it.
                thread._astrabox_origin = ctx.get(CURRENT_CALL)  # type: ignore[attr-defined]
                if not _is_executor_worker(getattr(thread, "_target", None)):  # its jobs are the units
                    kind = TIMER if isinstance(thread, threading.Timer) else THREAD
                    thread._astrabox_unit = work.units.new(thread._astrabox_origin, kind)  # type: ignore[attr-defined]
            except BaseException:  # noqa: B036
                pass
            return original_start(thread)

        start.__wrapped__ = original_start  # type: ignore[attr-defined]
        threading.Thread.start = start  # type: ignore[method-assign]

        original_submit = ThreadPoolExecutor.submit

        def submit(executor: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            ctx = contextvars.copy_context()
            work.remember_submitter(ctx, sys._getframe(1))
            unit = work.units.new(ctx.get(CURRENT_CALL), JOB)
            future = original_submit(executor, work.units.run_job, unit, ctx, fn, *args, **kwargs)
            work.track_job(ctx.get(CURRENT_CALL), future, unwrap_job(fn, args))
            try:
                work.units.track_future(future, unit)
            except BaseException:  # noqa: B036 - never break the provider's submit
                pass
            return future

        submit.__wrapped__ = original_submit  # type: ignore[attr-defined]
        ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]

    def remember_submitter(self, ctx: contextvars.Context, frame: Any) -> None:
        """Keep, in a job's context, the provider line that submitted it (only during a call)."""
        if self.locate is None or ctx.get(CURRENT_CALL) is None:
            return
        try:
            where = self.locate(frame)
            if where.file is not None:
                ctx.run(SUBMITTED_AT.set, where)
        except BaseException:  # noqa: B036 - never break the provider's submit
            pass

    def track_tasks(self, loop: Any) -> None:
        """Remember which call created each task on the harness's loop (``asyncio.create_task`` and
        ``ensure_future`` go through ``loop.create_task``), so that settling can wait for a call's tasks."""
        original = loop.create_task
        origins = self.task_origins
        units = self.units
        units.loop, units.loop_thread = loop, threading.get_ident()

        def create_task(coro: Any, *args: Any, **kwargs: Any) -> Any:
            task = original(coro, *args, **kwargs)
            try:
                ctx = kwargs.get("context")
                origins[task] = ctx.get(CURRENT_CALL) if ctx is not None else CURRENT_CALL.get()
                units.track_task(task, origins[task])
            except BaseException:  # noqa: B036 - never break the provider's task
                pass
            return task

        create_task.__wrapped__ = original  # type: ignore[attr-defined]
        loop.create_task = create_task

    def track_job(self, call: Optional[int], future: Any, fn: Any) -> None:
        if call is None:
            return
        with self._router.lock:
            if len(self._jobs) > 200:
                self._jobs = [j for j in self._jobs if not j.future.done()]
            self._jobs.append(Job(call, future, fn))

    # -- settling ----------------------------------------------------------------------------------------

    def work_of(self, loop: Any, calls: Set[int]) -> Leftovers:
        """The work still running that code of one of ``calls`` started: threads (timers included), tasks,
        loop timers and executor jobs, wherever they were started from (a thread a thread started inherits
        the call), plus the child processes those calls left."""
        out = Leftovers()
        with self._router.quiet():
            for t in threading.enumerate():
                if t in self.own_threads or getattr(t, "_astrabox_origin", None) not in calls or not t.is_alive():
                    continue
                target = getattr(t, "function", None) if isinstance(t, threading.Timer) else getattr(t, "_target", None)
                if _is_executor_worker(target):
                    continue  # an executor worker: its pending jobs are counted below
                out.threads.append(_thread(t, target))
            with self._router.lock:
                jobs = [j for j in self._jobs if j.call in calls and not j.future.done()]
            out.threads.extend(_job(j.fn) for j in jobs)
            for task, origin in list(self.task_origins.items()):
                if origin in calls and not task.done():
                    out.tasks.append(_task(task, qualified=False))
            now = loop.time()
            for h in loop_timers(loop):
                ctx = getattr(h, "_context", None)
                try:
                    origin = ctx.get(CURRENT_CALL) if ctx is not None else None
                except BaseException:  # noqa: B036
                    origin = None
                cb = getattr(h, "_callback", None)
                name = callable_name(cb)
                if origin in calls and not name.startswith("asyncio.") and not self.library_file(_callback_file(cb)):
                    out.timers.append(LeftoverTimer(name, round(h.when() - now, 6)))
            if self.spawned:
                alive = child_processes()
                for call in sorted(calls):
                    for pid in self.children_of.get(call, ()):
                        if pid in alive:
                            out.children.append(LeftoverChild(pid, alive[pid]))
        return out

    # -- leftovers ---------------------------------------------------------------------------------------

    def snapshot(self, loop: Any) -> Snapshot:
        """What is alive now (never raises). Cheap on purpose: it runs before every call."""
        try:
            children: Set[int] = set()
            if self.spawned:
                with self._router.quiet():
                    children = set(child_processes())
            return Snapshot(set(threading.enumerate()), _task_marks(loop), set(loop_timers(loop)), children)
        except BaseException:  # noqa: B036 - e.g. a provider thread with a broken __hash__
            return Snapshot(set(), set(), set(), set())

    def safe_leftovers(self, loop: Any, before: Snapshot, call_id: int, own_tasks: Set[Any]) -> Tuple[Leftovers, int]:
        """:meth:`leftovers`, or nothing (counted as one dropped entry) if inspecting them failed."""
        try:
            return self.leftovers(loop, before, call_id, own_tasks)
        except BaseException:  # noqa: B036
            return Leftovers(), 1

    def leftovers(self, loop: Any, before: Snapshot, call_id: int, own_tasks: Set[Any]) -> Tuple[Leftovers, int]:
        """What the call left alive, and how many entries were cut by the bounds."""
        threads = [t for t in threading.enumerate() if t not in before.threads and t not in self.own_threads]
        tasks = [t for t in _tasks_since(loop, before.tasks) if t not in own_tasks]
        timers = [h for h in loop_timers(loop) if h not in before.timers and h not in self.own_timers]
        if not (threads or tasks or timers or self._jobs or self.spawned):
            return Leftovers(), 0  # the common case: nothing new, nothing to describe
        out = Leftovers()
        with self._router.quiet():
            for t in threads:
                if not t.is_alive():
                    continue
                target = getattr(t, "_target", None)
                if isinstance(t, threading.Timer):
                    target = getattr(t, "function", None)
                if target is None and type(t).run is not threading.Thread.run:
                    target = type(t).run
                if _is_executor_worker(target):
                    continue  # an executor worker: reported below by its pending jobs, idle ones are fine
                out.threads.append(_thread(t, target))
            with self._router.lock:
                jobs = [j for j in self._jobs if j.call == call_id and not j.future.done()]
                self._jobs = [j for j in self._jobs if not j.future.done()]
            out.threads.extend(_job(j.fn) for j in jobs)
            out.tasks.extend(_task(task, qualified=True) for task in tasks if not task.done())
            now = loop.time()
            for h in timers:
                cb = getattr(h, "_callback", None)
                name = callable_name(cb)
                if name.startswith("asyncio."):
                    continue  # the wake-up of a sleeping task, already reported as a task
                if self.library_file(_callback_file(cb)):
                    continue  # a library's own housekeeping (a timeout or keep-alive handle)
                out.timers.append(LeftoverTimer(name, round(h.when() - now, 6)))
            for pid, cmd in sorted((child_processes() if self.spawned else {}).items()):
                if pid not in before.children:
                    out.children.append(LeftoverChild(pid, cmd))
            if out.children:
                self.children_of[call_id] = [c.pid for c in out.children]
        return out, out.trim()
