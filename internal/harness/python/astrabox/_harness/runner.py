"""The harness main loop: hello, one call at a time on the asyncio loop, replies with observations."""

from __future__ import annotations

import asyncio
import contextvars
import faulthandler
import inspect
import os
import signal
import sys
import threading
import time
from typing import Any, Dict, Optional, Set

import astrabox
from astrabox._harness import wire
from astrabox._harness.contexts import ArgumentError, SandboxBridge, callback_kwargs
from astrabox._harness.loader import METHODS, Loaded, load
from astrabox._harness.observe import CURRENT_CALL, Observer
from astrabox._harness.values import encode_error, encode_value, harness_error, safe_repr, type_name

PROTOCOL = 1


def safe_encode_value(result: Any, method: str) -> Dict[str, Any]:
    """encode_value that cannot fail: a provider object whose attributes raise is still reported."""
    try:
        return encode_value(result, method=method)
    except BaseException as exc:  # noqa: B036
        return {"type": "other", "python_type": type_name(type(result)), "repr": safe_repr(result),
                "problems": ["reading the returned value raised %s" % type_name(type(exc))]}


def safe_encode_error(exc: BaseException, observer: Observer, cancelled: bool = False) -> Dict[str, Any]:
    """encode_error that cannot fail."""
    try:
        return encode_error(exc, is_provider_file=observer.is_provider_file, cancelled=cancelled)
    except BaseException as inner:  # noqa: B036
        err = harness_error(type_name(type(exc)), "<describing the exception raised %s>" % type_name(type(inner)))
        err["cancelled"] = cancelled
        return err


def _limit(name: str, resource_id: int, notes: list) -> None:
    import resource

    raw = os.environ.get(name, "0") or "0"
    try:
        value = int(raw)
    except ValueError:
        notes.append("%s=%r is not an integer; left as is" % (name, raw))
        return
    if value <= 0:
        return
    try:
        _, hard = resource.getrlimit(resource_id)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(resource_id, (value, value))
    except (ValueError, OSError) as exc:
        notes.append("could not apply %s=%d: %s" % (name, value, exc))


def apply_limits() -> None:
    """``RLIMIT_CORE=0`` and the address-space and open-files limits from the environment."""
    import resource

    notes: list = []
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError) as exc:
        notes.append("could not disable core dumps: %s" % exc)
    _limit("ASTRABOX_LIMIT_AS", resource.RLIMIT_AS, notes)
    _limit("ASTRABOX_LIMIT_NOFILE", resource.RLIMIT_NOFILE, notes)
    for note in notes:
        try:
            os.write(2, ("astrabox harness: %s\n" % note).encode())
        except OSError:
            pass


class Runner:
    """Serves requests from Go until ``shutdown`` or end of input."""

    def __init__(self, cookie: str, writer: wire.Writer, observer: Observer) -> None:
        self.cookie = cookie
        self.writer = writer
        self.observer = observer
        self.bridge = SandboxBridge(writer.send)
        self.loaded: Optional[Loaded] = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.queue: Optional["asyncio.Queue[Dict[str, Any]]"] = None
        self.in_flight: Optional[int] = None
        self.call_task: Optional["asyncio.Task[Any]"] = None
        self.cancel_requested = False
        self.own_tasks: Set[Any] = set()
        self.early_cancels: Set[int] = set()  # cancels that overtook their call in the queue
        self.last_call = 0
        self._bg_lock = threading.RLock()
        self._bg_scheduled = False

    # -- messages from the reader thread ---------------------------------------------------------------

    def deliver(self, msg: Dict[str, Any]) -> None:
        """Reader thread: route one message."""
        kind = msg.get("kind")
        loop = self.loop
        assert loop is not None
        if kind == "sandbox_reply":
            self.bridge.resolve(msg)
        elif kind == "call":
            loop.call_soon_threadsafe(self._enqueue, msg)
        elif kind == "cancel":
            loop.call_soon_threadsafe(self._cancel, msg.get("id"))
        elif kind == "shutdown":
            loop.call_soon_threadsafe(self._shutdown)
        # Unknown kinds are ignored: a newer Go side may send hints this harness does not need.

    def _enqueue(self, msg: Dict[str, Any]) -> None:
        assert self.queue is not None
        self.queue.put_nowait(msg)

    def _cancel(self, call_id: Any) -> None:
        task = self.call_task
        if call_id is not None and call_id == self.in_flight and task is not None and not task.done():
            self.cancel_requested = True
            task.cancel()
        elif isinstance(call_id, int) and call_id > self.last_call and len(self.early_cancels) < 1000:
            self.early_cancels.add(call_id)

    def _shutdown(self) -> None:
        self.writer.close()
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BaseException:  # noqa: B036
                pass
        os._exit(0)

    # -- background observations -----------------------------------------------------------------------

    def schedule_background(self) -> None:
        """Any thread: an observation arrived while idle; send it from the loop soon."""
        with self._bg_lock:
            if self._bg_scheduled:
                return
            self._bg_scheduled = True
        loop = self.loop
        try:
            if loop is not None:
                loop.call_soon_threadsafe(self._flush_background_idle)
        except RuntimeError:
            pass

    def _flush_background_idle(self) -> None:
        with self._bg_lock:
            self._bg_scheduled = False
        if self.in_flight is None:
            self.send_background()

    def send_background(self) -> None:
        obs = self.observer.take_background()
        if obs is not None:
            self.writer.send({"kind": "background", "observations": obs})

    # -- calls -----------------------------------------------------------------------------------------

    async def main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue = asyncio.Queue()
        me = asyncio.current_task()
        if me is not None:
            self.own_tasks.add(me)
        self.observer.notify = self.schedule_background
        reader = threading.Thread(target=wire.read_frames, args=(self.deliver,), name="astrabox-harness-reader",
                                  daemon=True)
        self.observer.own_threads.add(reader)
        reader.start()
        while True:
            msg = await self.queue.get()
            await self.handle_call(msg)
            self.send_background()

    def _sync_markers(self, call_id: int) -> None:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except BaseException:  # noqa: B036 - a provider may have replaced or closed them
                pass
        marker = ("\n\x00astrabox-sync:%s:%d\x00\n" % (self.cookie, call_id)).encode("utf-8", "replace")
        for fd in (1, 2):
            view = memoryview(marker)
            while view:
                try:
                    view = view[os.write(fd, view):]
                except InterruptedError:
                    continue
                except OSError:
                    break  # closed or broken: Go does not wait on a closed stream

    async def handle_call(self, msg: Dict[str, Any]) -> None:
        call_id = msg.get("id")
        if not isinstance(call_id, int) or isinstance(call_id, bool):
            wire.die("harness protocol corrupted: a call without an integer id", 2)
            return
        method = msg.get("method")
        args = msg.get("args")
        loop = self.loop
        assert loop is not None
        self.in_flight = call_id
        self.last_call = max(self.last_call, call_id)
        self.cancel_requested = False
        self.observer.begin_call(call_id)
        before = self.observer.snapshot(loop)  # never raises
        ctx = contextvars.copy_context()
        ctx.run(CURRENT_CALL.set, call_id)
        started = time.perf_counter_ns()
        try:
            ok, value, error = await self._dispatch(ctx, call_id, method, args)
        except Exception as exc:  # a harness bug must still produce exactly one reply
            ok, value = False, None
            error = harness_error("astrabox.harness.InternalError", "the harness failed: %s" % safe_repr(exc, 2048))
        duration = time.perf_counter_ns() - started
        self.observer.mark_returned(call_id)
        leftovers, cut = self.observer.safe_leftovers(loop, before, call_id, self.own_tasks | {self.call_task})
        self.call_task = None
        self._sync_markers(call_id)
        self.send_background()
        obs = self.observer.take_current()
        obs["leftovers"] = leftovers
        obs["dropped"] += cut
        reply = {"kind": "reply", "id": call_id, "ok": ok, "value": value, "error": error,
                 "duration_ns": duration, "observations": obs}
        try:
            self.writer.send(reply)
        except wire.FrameTooLarge as exc:
            reply.update(ok=False, value=None,
                         error=harness_error("astrabox.harness.ReplyTooLarge", "the reply could not be sent: %s" % exc))
            try:
                self.writer.send(reply)
            except wire.FrameTooLarge:
                reply["observations"] = {"logs": [], "warnings": [], "audit": [],
                                         "leftovers": {"threads": [], "tasks": [], "timers": [], "children": []},
                                         "dropped": len(obs["logs"]) + len(obs["warnings"]) + len(obs["audit"])}
                self.writer.send(reply)
        self.observer.end_call()
        self.in_flight = None
        self.early_cancels = {c for c in self.early_cancels if c > self.last_call}

    async def _dispatch(self, ctx: contextvars.Context, call_id: int, method: Any, args: Any) -> Any:
        if method == "load":
            if self.loaded is not None:
                return False, None, harness_error("astrabox.harness.AlreadyLoaded", "load was already called")
            try:
                self.loaded = ctx.run(load, args, self.observer)
            except ArgumentError as exc:
                return False, None, harness_error("astrabox.harness.ArgumentError", str(exc))
            except BaseException as exc:  # noqa: B036 - import errors, constructor failures, SystemExit...
                with self.observer.quiet():
                    return False, None, safe_encode_error(exc, self.observer)
            return True, self.loaded.value, None
        if method not in METHODS:
            return False, None, harness_error("astrabox.harness.UnknownMethod", "unknown method %r" % (method,))
        if self.loaded is None:
            return False, None, harness_error("astrabox.harness.NotLoaded", "load must come first")
        instance = self.loaded.instance
        if instance is None:
            return False, None, harness_error(
                "astrabox.harness.NotInstantiated",
                "the target is not a RuntimePreparationProvider subclass, so no instance exists to call",
            )
        try:
            kwargs = callback_kwargs(method, args, self.bridge)
        except ArgumentError as exc:
            return False, None, harness_error("astrabox.harness.ArgumentError", str(exc))
        except Exception as exc:  # a shape the builders did not foresee
            return False, None, harness_error("astrabox.harness.ArgumentError",
                                              "bad arguments for %s: %s" % (method, safe_repr(exc, 1024)))
        if method == "plan":
            return ctx.run(self._call_plan, instance, kwargs)
        return await self._call_async(ctx, instance, method, kwargs)

    def _call_plan(self, instance: Any, kwargs: Dict[str, Any]) -> Any:
        try:
            result = instance.plan(**kwargs)
        except BaseException as exc:  # noqa: B036
            with self.observer.quiet():
                return False, None, safe_encode_error(exc, self.observer)
        with self.observer.quiet():
            if inspect.iscoroutine(result):
                shown = safe_repr(result)
                result.close()
                return True, {"type": "coroutine", "repr": shown}, None
            return True, safe_encode_value(result, "plan"), None

    async def _invoke(self, instance: Any, method: str, kwargs: Dict[str, Any]) -> Any:
        try:
            result = getattr(instance, method)(**kwargs)
            if inspect.isawaitable(result):
                return "ok", await result, False
            return "ok", result, True
        except BaseException as exc:  # noqa: B036 - CancelledError, SystemExit and KeyboardInterrupt included
            return "raised", exc, None

    async def _call_async(self, ctx: contextvars.Context, instance: Any, method: str, kwargs: Dict[str, Any]) -> Any:
        assert self.loop is not None
        task = ctx.run(self.loop.create_task, self._invoke(instance, method, kwargs))
        self.call_task = task
        if self.in_flight in self.early_cancels:
            self.early_cancels.discard(self.in_flight)
            self.cancel_requested = True
            task.cancel()
        try:
            outcome, result, was_sync = await task
        except asyncio.CancelledError as exc:  # cancelled before its first step
            outcome, result, was_sync = "raised", exc, None
        if outcome == "raised":
            cancelled = isinstance(result, asyncio.CancelledError) and self.cancel_requested
            with self.observer.quiet():
                return False, None, safe_encode_error(result, self.observer, cancelled=cancelled)
        with self.observer.quiet():
            if inspect.iscoroutine(result):
                shown = safe_repr(result)
                result.close()
                value = {"type": "other", "python_type": "coroutine", "repr": shown}
            else:
                value = safe_encode_value(result, method)
        if was_sync:
            value["was_sync"] = True
        return True, value, None


def main() -> None:
    """Entry point after ``__main__`` has fixed ``sys.path`` and checked the cookie."""
    cookie = os.environ.get("ASTRABOX_HARNESS_COOKIE", "")
    for fd in (wire.IN_FD, wire.OUT_FD):
        try:
            os.set_inheritable(fd, False)
        except OSError:
            wire.die("descriptor %d is not open: the harness must be started by astrabox" % fd, 2)
    apply_limits()
    try:
        faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
    except (AttributeError, ValueError, RuntimeError, OSError):
        pass
    sdk_dir = os.path.dirname(os.path.abspath(astrabox.__file__))
    observer = Observer(sdk_dir)
    observer.install()
    writer = wire.Writer()
    # A forked child (multiprocessing, os.fork) must never write into the protocol stream.
    os.register_at_fork(after_in_child=writer.close)
    writer.send(
        {
            "kind": "hello",
            "protocol": PROTOCOL,
            "cookie": cookie,
            "pid": os.getpid(),
            "python": list(sys.version_info[:3]),
            "implementation": sys.implementation.name,
            "executable": sys.executable,
        }
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    runner = Runner(cookie, writer, observer)
    task = loop.create_task(runner.main())
    runner.own_tasks.add(task)
    while not task.done():
        try:
            loop.run_until_complete(task)
        except RuntimeError:
            if loop.is_closed():
                wire.die("the provider closed the harness's event loop", 4)
            continue  # the provider stopped the loop: keep serving
        except BaseException as exc:  # noqa: B036
            wire.die("internal error: %s" % safe_repr(exc), 70)
    if task.exception() is not None:
        wire.die("internal error: %s" % safe_repr(task.exception()), 70)
    os._exit(0)
