"""The harness main loop: hello, one call at a time on the asyncio loop, replies with observations."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import faulthandler
import inspect
import os
import signal
import sys
import threading
import time
from typing import Any, Deque, Dict, NamedTuple, Optional, Set

import astrabox
from astrabox._harness import egress, wire
from astrabox._harness.contexts import ArgumentError, SandboxBridge, callback_kwargs
from astrabox._harness.coverage import Coverage
from astrabox._harness.host import apply_limits, become_host, dump_profile, start_profile
from astrabox._harness.leftovers import IdleWatch
from astrabox._harness.loader import METHODS, Loaded, load
from astrabox._harness.observe import CURRENT_CALL, Observer, Snapshot
from astrabox._harness.records import KIND_COROUTINE, KIND_OTHER, Leftovers, LeftoverThread, Observations, Result
from astrabox._harness.values import (encode_error, encode_value, harness_error, material_larger_than, material_too_large,
                                      safe_repr, type_name)

PROTOCOL = 1

# When the harness may leave out the separate ``returned`` frame and let the reply say it (docs/protocol.md,
# "returned"): the call's deadline is at least FOLD_MARGIN_S away when the callback's own code ends, the reply is
# ready within FOLD_WAIT_NS of that, and its frame (which Go reads and decodes before it sees it) is below
# FOLD_BYTES. Otherwise ``returned`` goes first, as soon as the callback ended or, at the latest, once one of
# these no longer holds.
FOLD_MARGIN_S = 1.0
FOLD_WAIT_NS = 100_000_000
FOLD_BYTES = 65536


def _observations_wire(obs: Observations) -> Any:
    """A reply's observations: the constant text when there are none (most calls), else their wire form."""
    if obs.empty() and obs.leftovers.empty():
        return wire.EMPTY_OBSERVATIONS
    return obs.wire()


def safe_encode_value(result: Any, method: str) -> Dict[str, Any]:
    """encode_value that cannot fail: a provider object whose attributes raise is still reported."""
    try:
        return encode_value(result, method=method)
    except BaseException as exc:  # noqa: B036
        return Result(KIND_OTHER, python_type=type_name(type(result)), repr=safe_repr(result),
                      problems=["reading the returned value raised %s" % type_name(type(exc))]).wire()


def safe_encode_error(exc: BaseException, observer: Observer, cancelled: bool = False) -> Dict[str, Any]:
    """encode_error that cannot fail."""
    try:
        return encode_error(exc, is_provider_file=observer.is_provider_file, cancelled=cancelled)
    except BaseException as inner:  # noqa: B036
        err = harness_error(type_name(type(exc)), "<describing the exception raised %s>" % type_name(type(inner)))
        err["cancelled"] = cancelled
        return err


class CallInFlight(NamedTuple):
    """The call being served: its id, what was alive before it, its context, and its method name."""

    id: int
    before: Snapshot
    ctx: contextvars.Context
    method: str


class Runner:
    """Serves requests from Go until ``shutdown`` or end of input.

    Requests are read on the event loop itself (``loop.add_reader`` on descriptor 3), so a call starts in the
    same loop iteration that read it: no thread hand-off, no queue. A synchronous method (``load``, ``plan``)
    runs to its reply inside that iteration; an asynchronous one runs as a task whose completion sends the
    reply. A watchdog thread, blocked in ``poll`` on descriptor 3 without reading from it, ends the process
    when Go goes away even if the provider blocks the loop forever.
    """

    def __init__(self, cookie: str, writer: wire.Writer, observer: Observer) -> None:
        self.cookie = cookie
        self.writer = writer
        self.observer = observer
        self.coverage = Coverage(observer.is_provider_file, observer.quiet)
        self.bridge = SandboxBridge(writer.send)
        self.meter = wire.WriteMeter(writer)
        self.loaded: Optional[Loaded] = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.frames = wire.FrameReader()
        self.pending: Deque[Dict[str, Any]] = collections.deque()
        self.in_flight: Optional[int] = None
        self.call_task: Optional["asyncio.Task[Any]"] = None
        self.cancel_requested = False
        self.own_tasks: Set[Any] = set()
        self.early_cancels: Set[int] = set()  # cancels that overtook their call in the queue
        self.last_call = 0
        self._bg_lock = threading.RLock()
        self._bg_scheduled = False
        self._marker_prefix = ("\n\x00astrabox-sync:%s:" % cookie).encode("utf-8", "replace")
        # The call in flight: id, snapshot, context and start time, kept until its reply is sent.
        self._call: Optional[CallInFlight] = None
        self._started = 0
        self._returned_ns: Optional[int] = None
        # The call whose ``returned`` frame is still owed (folded into its reply unless that gets slow or large).
        self._returned_owed: Optional[int] = None
        # The deadline of the call in flight on the loop's clock (None without one), whether the loop ran while
        # the call was pending once that deadline had passed, and when the callback's own code ended.
        self._deadline_at: Optional[float] = None
        self._deadline_handle: Optional[asyncio.TimerHandle] = None
        self._loop_free_at_deadline = False
        self._ended_at: Optional[float] = None
        self._step_at: Optional[float] = None  # when the callback's latest step began, on the loop's clock
        # How the process must end once the reply of the call in flight is sent: a callback raised SystemExit
        # or KeyboardInterrupt, which on the platform's asyncio host end the process.
        self._exit_after: Optional[Dict[str, Any]] = None

    # -- messages, read on the loop ----------------------------------------------------------------------

    def on_readable(self) -> None:
        """Loop callback: read what descriptor 3 holds and act on every complete message."""
        try:
            msgs = self.frames.read(wire.IN_FD)
        except wire.EndOfRequests:
            self._end_of_requests()
            return
        for msg in msgs:
            self.deliver(msg)

    def deliver(self, msg: Dict[str, Any]) -> None:
        """Route one message (on the loop)."""
        kind = msg.get("kind")
        if kind == "sandbox_reply":
            self.bridge.resolve(msg)
        elif kind == "call":
            self.pending.append(msg)
            if self.in_flight is None:
                self._next_call()
        elif kind == "cancel":
            self._cancel(msg.get("id"))
        elif kind == "shutdown":
            self._shutdown()
        # Unknown kinds are ignored: a newer Go side may send hints this harness does not need.

    def _end_of_requests(self) -> None:
        dump_profile()
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BaseException:  # noqa: B036
                pass
        os._exit(0)

    def _cancel(self, call_id: Any) -> None:
        task = self.call_task
        if call_id is not None and call_id == self.in_flight and task is not None and not task.done():
            self.cancel_requested = True
            task.cancel()
        elif isinstance(call_id, int) and call_id > self.last_call and len(self.early_cancels) < 1000:
            self.early_cancels.add(call_id)

    def _shutdown(self) -> None:
        dump_profile()
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
            self.writer.send({"kind": "background", "observations": obs.wire()})

    # -- calls -----------------------------------------------------------------------------------------

    async def main(self) -> None:
        self.loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        if me is not None:
            self.own_tasks.add(me)
        self.observer.notify = self.schedule_background
        self.observer.track_tasks(self.loop)
        watchdog = threading.Thread(target=wire.watch_hangup, name="astrabox-harness-watchdog", daemon=True)
        self.observer.own_threads.add(watchdog)
        watchdog.start()
        try:
            os.set_blocking(wire.IN_FD, False)
        except OSError as exc:
            wire.die("descriptor %d cannot be read (%s)" % (wire.IN_FD, exc.strerror), 2)
        self.loop.add_reader(wire.IN_FD, self.on_readable)
        await self.loop.create_future()  # serves until shutdown or end of input end the process

    def _sync_markers(self, call_id: int) -> bool:
        """Flush the standard streams and, unless nothing but the harness wrote since the last sync point, write
        the sync marker of ``call_id`` to descriptors 1 and 2. Returns whether the markers were written."""
        out, err, out0, err0 = sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__
        # Each distinct stream once (by identity: a provider's stream may define __eq__).
        for stream in (out, None if err is out else err, None if out0 is out or out0 is err else out0,
                       None if err0 is out or err0 is err or err0 is out0 else err0):
            if stream is None:
                continue
            try:
                stream.flush()
            except BaseException:  # noqa: B036 - a provider may have replaced or closed them
                pass
        # A child process writes with its own counters: once the provider has started one, always mark.
        if self.meter.quiet_since_sync() and not self.observer.spawned:
            self.meter.synced()
            return False
        marker = self._marker_prefix + b"%d\x00\n" % call_id
        wrote = 0
        for fd in (1, 2):
            view = memoryview(marker)
            while view:
                try:
                    n = os.write(fd, view)
                except InterruptedError:
                    continue
                except BlockingIOError:
                    wire.wait_writable(fd)
                    continue
                except OSError:
                    break  # closed or broken: Go does not wait on a closed stream
                wrote += n
                view = view[n:]
        self.meter.synced(wrote)
        return True

    def _next_call(self) -> None:
        """Start queued calls until one is left running as a task (or none is left)."""
        while self.in_flight is None and self.pending:
            self._start_call(self.pending.popleft())

    def _start_call(self, msg: Dict[str, Any]) -> None:
        call_id = msg.get("id")
        if not isinstance(call_id, int) or isinstance(call_id, bool):
            wire.die("harness protocol corrupted: a call without an integer id", 2)
            return
        method = msg.get("method")
        loop = self.loop
        assert loop is not None
        self.in_flight = call_id
        self.last_call = max(self.last_call, call_id)
        self.cancel_requested = False
        self.observer.begin_call(call_id)
        if method != "load" and method != "settle":  # what runs while settling is still the last callback's
            self.coverage.begin(method if isinstance(method, str) else "")
        # The harness's own deadline timer, armed before the snapshot so that it is never a leftover. `plan` runs
        # to its reply inside this loop iteration, so the loop cannot run before it ends: no timer is needed.
        self._watch_deadline(msg.get("timeout_s") if method != "load" and method != "settle" else None,
                             arm=method != "plan")
        before = self.observer.snapshot(loop)  # never raises
        ctx = contextvars.copy_context()
        ctx.run(CURRENT_CALL.set, call_id)
        self._call = CallInFlight(call_id, before, ctx, method if isinstance(method, str) else "")
        self._started = time.perf_counter_ns()
        self._returned_ns = None
        self._returned_owed = None
        if method != "load" and method != "settle":
            # Modules the provider imported when it loaded are found (and hooked) before its first callback runs.
            ctx.run(self.observer.scan_native)
        try:
            outcome = self._dispatch(ctx, call_id, method, msg.get("args"))
        except Exception as exc:  # a harness bug must still produce exactly one reply
            outcome = (False, None, harness_error("astrabox.harness.InternalError",
                                                  "the harness failed: %s" % safe_repr(exc, 2048)))
        if outcome is not None:
            self._returned()
            self._reply(*outcome)

    def _returned(self, value: Any = None) -> None:
        """The callback's own code has ended: tell Go before the harness inspects what it left, encodes its value
        (``value``, when not encoded yet) and sends the reply, so that the callback's deadline counts the
        provider's time only and encoding a large material is the kit's (docs/protocol.md, "returned").

        When no cancel reached the call, its deadline is far (at least FOLD_MARGIN_S away, or there is none) and
        ``value`` is not a large material, the frame is owed instead: the reply carries it (:meth:`_send_reply`),
        one wake-up of the Go side fewer per call, unless the reply turns out slow or large, in which case
        ``returned`` goes first."""
        self._returned_ns = time.perf_counter_ns()
        if self._call is None:
            return
        # A cancel that reached the call means Go's grace is running: say at once that the code ended.
        far = not self.cancel_requested and (
            self._deadline_at is None or (self.loop is not None and self._deadline_at - self.loop.time() >= FOLD_MARGIN_S))
        if far and not material_larger_than(value, FOLD_BYTES):
            self._returned_owed = self._call.id
            return
        self.writer.send({"kind": "returned", "id": self._call.id})

    def _send_reply(self, reply: Dict[str, Any]) -> None:
        """Send ``reply``, preceded by the ``returned`` frame still owed when the reply took longer than
        FOLD_WAIT_NS after the callback ended or is FOLD_BYTES or more: both go in one write."""
        header, body = wire.encode_frame(reply)
        owed, self._returned_owed = self._returned_owed, None
        before = b""
        if owed is not None and self._returned_ns is not None and (
                len(body) >= FOLD_BYTES or time.perf_counter_ns() - self._returned_ns > FOLD_WAIT_NS):
            before = b"".join(wire.encode_frame({"kind": "returned", "id": owed}))
        self.writer.write_frame(header, body, before)

    def _reply(self, ok: bool, value: Any, error: Any) -> None:
        """Send the reply of the call in flight, with what it left behind."""
        duration = (self._returned_ns or time.perf_counter_ns()) - self._started
        if self._call is not None and self._call.method != "load":  # before it is marked returned: the call's
            token = CURRENT_CALL.set(self._call.id)
            try:
                self.observer.scan_native()
            finally:
                CURRENT_CALL.reset(token)
        held = self._held_past_deadline()
        self._end_deadline()
        assert self._call is not None and self.loop is not None
        call_id, before, method = self._call.id, self._call.before, self._call.method
        self.observer.mark_returned(call_id)
        if method == "settle":  # what settling itself saw running is in its value, never its own leftovers
            leftovers, cut = Leftovers(), 0
        else:
            leftovers, cut = self.observer.safe_leftovers(self.loop, before, call_id, self.own_tasks)
        self.call_task = None
        marked = self._sync_markers(call_id)
        self.send_background()
        obs = self.observer.take_current()
        obs.leftovers = leftovers
        obs.dropped += cut
        reply = {"kind": "reply", "id": call_id, "ok": ok, "value": value, "error": error,
                 "duration_ns": duration, "observations": _observations_wire(obs), "markers": marked,
                 "cancel_received": self.cancel_requested, "held_past_deadline": held,
                 "waited_units": self.observer.units.end_call(call_id)}
        if method != "load":
            reply["coverage"] = self.coverage.take()
        if self._exit_after is not None:
            reply["exit"] = self._exit_after
        try:
            self._send_reply(reply)
        except wire.FrameTooLarge as exc:
            reply.update(ok=False, value=None,
                         error=harness_error("astrabox.harness.ReplyTooLarge", "the reply could not be sent: %s" % exc))
            try:
                self._send_reply(reply)
            except wire.FrameTooLarge:
                reply["observations"] = Observations(dropped=len(obs.logs) + len(obs.warnings) + len(obs.audit),
                                                     connections=obs.connections, sends=obs.sends).wire()
                self._send_reply(reply)
        if self._exit_after is not None:
            self._end_process(self._exit_after)
        pending = self.observer.end_call()
        self._call = None
        self.in_flight = None
        if pending:
            self.schedule_background()
        if self.early_cancels:
            self.early_cancels = {c for c in self.early_cancels if c > self.last_call}

    def _dispatch(self, ctx: contextvars.Context, call_id: int, method: Any, args: Any) -> Any:
        """The outcome ``(ok, value, error)`` of a synchronous call, or ``None`` once an asynchronous one runs."""
        if method == "load":
            if self.loaded is not None:
                return False, None, harness_error("astrabox.harness.AlreadyLoaded", "load was already called")
            if isinstance(args, dict):
                self.coverage.start(args.get("coverage"), args.get("project_root"))
            try:
                self.loaded = ctx.run(load, args, self.observer)
            except ArgumentError as exc:
                return False, None, harness_error("astrabox.harness.ArgumentError", str(exc))
            except BaseException as exc:  # noqa: B036 - import errors, constructor failures, SystemExit...
                with self.observer.quiet():
                    return False, None, safe_encode_error(exc, self.observer)
            return True, self.loaded.value, None
        if method == "settle":
            return self._start_settle(ctx, args)
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
        self._start_async(ctx, instance, method, kwargs)
        return None

    def _call_plan(self, instance: Any, kwargs: Dict[str, Any]) -> Any:
        try:
            result = instance.plan(**kwargs)
        except BaseException as exc:  # noqa: B036
            self._exit_after = exit_info(exc)
            with self.observer.quiet():
                return False, None, safe_encode_error(exc, self.observer)
        too_large = material_too_large(result)
        if too_large is not None:
            return False, None, harness_error("astrabox.harness.MaterialTooLarge", too_large)
        with self.observer.quiet():
            if inspect.iscoroutine(result):
                shown = safe_repr(result)
                result.close()
                return True, Result(KIND_COROUTINE, repr=shown).wire(), None
            return True, safe_encode_value(result, "plan"), None

    async def _invoke(self, instance: Any, method: str, kwargs: Dict[str, Any]) -> Any:
        try:
            result = getattr(instance, method)(**kwargs)
            if inspect.isawaitable(result):
                value = await _Stepped(result, self._mark_step)
                self._mark_ended()
                return "ok", value, False
            self._mark_ended()
            return "ok", result, True
        except BaseException as exc:  # noqa: B036 - CancelledError, SystemExit and KeyboardInterrupt included
            self._mark_ended()
            return "raised", exc, None

    # -- the deadline, judged on the loop ----------------------------------------------------------------

    def _watch_deadline(self, timeout_s: Any, arm: bool = True) -> None:
        """Note the call's deadline on the loop's clock and arm a timer that tells whether the loop got to run
        once it passed while the call was still pending. Whether a callback held the loop through its deadline
        is then a fact of the loop's own order of events, not of how fast Go's cancel travelled."""
        self._end_deadline()
        self._ended_at = None
        self._step_at = None
        self._loop_free_at_deadline = False
        if self.loop is None or not isinstance(timeout_s, (int, float)) or isinstance(timeout_s, bool) or timeout_s <= 0:
            return
        self._deadline_at = self.loop.time() + float(timeout_s)
        if arm:
            self._deadline_handle = self.loop.call_at(self._deadline_at, self._deadline_passed)

    def _deadline_passed(self) -> None:
        """Timer at the deadline: the loop runs, so a callback still pending yields to it (it does not hold it)."""
        self._deadline_handle = None
        if self._ended_at is None and self._call is not None:
            self._loop_free_at_deadline = True

    def _mark_step(self) -> None:
        if self.loop is not None:
            self._step_at = self.loop.time()

    def _mark_ended(self) -> None:
        if self.loop is not None and self._ended_at is None:
            self._ended_at = self.loop.time()
        if self._call is not None:  # what the callback waited for is fixed when its own code ends
            self.observer.units.end_call(self._call.id)

    def _held_past_deadline(self) -> bool:
        """The callback's code ended at or after its deadline without the loop having run once the deadline had
        passed: it held the loop (synchronous work) through the deadline, so no cancel could reach it."""
        if self._deadline_at is None or self._loop_free_at_deadline:
            return False
        if self._step_at is not None and self._step_at >= self._deadline_at:
            return False  # its last step began after the deadline: the loop was free when it passed
        ended = self._ended_at
        if ended is None and self.loop is not None:
            ended = self.loop.time()  # a synchronous method, replied in the iteration that ran it
        return ended is not None and ended >= self._deadline_at

    def _end_deadline(self) -> None:
        if self._deadline_handle is not None:
            self._deadline_handle.cancel()
            self._deadline_handle = None
        self._deadline_at = None

    def _start_settle(self, ctx: contextvars.Context, args: Any) -> Any:
        """``settle``: wait until the work that the given calls left running has ended, at most ``timeout_s``."""
        calls = args.get("calls") if isinstance(args, dict) else None
        timeout = args.get("timeout_s") if isinstance(args, dict) else None
        if not isinstance(calls, list) or not all(isinstance(c, int) and not isinstance(c, bool) for c in calls):
            return False, None, harness_error("astrabox.harness.ArgumentError", "settle: args.calls must be a list of call ids")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 <= timeout <= 3600:
            return False, None, harness_error("astrabox.harness.ArgumentError", "settle: args.timeout_s must be a number of seconds in [0, 3600]")
        assert self.loop is not None
        task = ctx.run(self.loop.create_task, self._settle(set(calls), float(timeout)))
        self.call_task = task
        task.add_done_callback(self._async_done)
        return None

    async def _settle(self, calls: Set[int], timeout: float) -> Any:
        assert self.loop is not None
        loop = self.loop
        end = loop.time() + timeout
        waited = 0.0
        start = loop.time()
        idle = IdleWatch()
        while True:
            try:
                left = self.observer.work_of(loop, calls)
            except BaseException as exc:  # noqa: B036 - a provider object that cannot be inspected
                left = Leftovers(threads=[LeftoverThread("?", False, "inspecting work raised %s" % type_name(type(exc)), None, None)])
                break
            if left.empty() or loop.time() >= end:
                break
            # Only child processes left, each idle for the whole window (an unwaited `sleep`, a helper that
            # waits for a signal): nothing the calls must settle runs there; stop waiting and say so.
            if not (left.threads or left.tasks or left.timers) and idle.all_idle(left.children, loop.time()):
                for c in left.children:
                    c.idle = True
                break
            await asyncio.sleep(min(0.01, max(0.0, end - loop.time())))
        waited = loop.time() - start
        return "settled", {"type": "settle", "settled": left.empty(), "remaining": left.wire(),
                           "waited_s": round(waited, 3)}, None

    def _end_process(self, how: Dict[str, Any]) -> None:
        """End the process as the platform's asyncio host does when a callback raises SystemExit (exit with its
        code) or KeyboardInterrupt (death by SIGINT), once the reply that says so is sent."""
        dump_profile()
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except BaseException:  # noqa: B036
                pass
        if how.get("signal") == "SIGINT":
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except BaseException:  # noqa: B036
                pass
            os._exit(130)
        os._exit(int(how.get("code", 1)) & 0xFF)

    def _start_async(self, ctx: contextvars.Context, instance: Any, method: str, kwargs: Dict[str, Any]) -> None:
        assert self.loop is not None
        task = ctx.run(self.loop.create_task, self._invoke(instance, method, kwargs))
        self.call_task = task
        if self.in_flight is not None:
            self.observer.units.begin_call(self.in_flight, task)
        if self.in_flight in self.early_cancels:
            self.early_cancels.discard(self.in_flight)
            self.cancel_requested = True
            task.cancel()
        task.add_done_callback(self._async_done)

    def _async_done(self, task: "asyncio.Task[Any]") -> None:
        """Done callback of the call's task: encode its outcome, reply, and start the next queued call."""
        assert self._call is not None
        method = self._call.method
        self._returned(_returned_value(task))
        try:
            outcome = self._async_outcome(task, method)
        except Exception as exc:  # a harness bug must still produce exactly one reply
            outcome = (False, None, harness_error("astrabox.harness.InternalError",
                                                  "the harness failed: %s" % safe_repr(exc, 2048)))
        self._reply(*outcome)
        self._next_call()

    def _async_outcome(self, task: "asyncio.Task[Any]", method: str) -> Any:
        if task.cancelled():  # cancelled before its first step
            outcome, result, was_sync = "raised", asyncio.CancelledError(), None
        else:
            outcome, result, was_sync = task.result()
        if outcome == "settled":
            return True, result, None
        if outcome == "raised":
            self._exit_after = exit_info(result)
            cancelled = isinstance(result, asyncio.CancelledError) and self.cancel_requested
            with self.observer.quiet():
                return False, None, safe_encode_error(result, self.observer, cancelled=cancelled)
        too_large = material_too_large(result)
        if too_large is not None:
            return False, None, harness_error("astrabox.harness.MaterialTooLarge", too_large)
        with self.observer.quiet():
            if inspect.iscoroutine(result):
                shown = safe_repr(result)
                result.close()
                value = Result(KIND_OTHER, python_type="coroutine", repr=shown).wire()
            else:
                value = safe_encode_value(result, method)
        if was_sync:
            value["was_sync"] = True
        return True, value, None


def _returned_value(task: "asyncio.Task[Any]") -> Any:
    """What the call's task returned (before it is encoded), or None (never raises)."""
    try:
        if task.cancelled():
            return None
        outcome = task.result()
        return outcome[1] if outcome[0] == "ok" else None
    except BaseException:  # noqa: B036
        return None


class _Stepped:
    """Awaits a provider's awaitable step by step, calling ``on_step`` as each step begins, so that the harness
    knows whether the step in which a callback ended began before its deadline (a synchronous stretch that
    spanned the deadline) or after it (the loop was free when the deadline passed)."""

    __slots__ = ("_awaitable", "_on_step")

    def __init__(self, awaitable: Any, on_step: Any) -> None:
        self._awaitable = awaitable
        self._on_step = on_step

    def __await__(self) -> Any:
        awaitable = self._awaitable
        # A generator-based coroutine (types.coroutine) is awaitable without __await__.
        it = awaitable.__await__() if hasattr(type(awaitable), "__await__") else iter(awaitable)
        sent: Any = None
        thrown: Optional[BaseException] = None
        while True:
            self._on_step()
            try:
                yielded = it.send(sent) if thrown is None else it.throw(thrown)
            except StopIteration as stop:
                return stop.value
            try:
                sent, thrown = (yield yielded), None
            except BaseException as exc:  # noqa: B036 - the task's cancellation is thrown in here
                sent, thrown = None, exc


def exit_info(exc: BaseException) -> Optional[Dict[str, Any]]:
    """How an exception raised by a callback ends the platform's host process, or None when it does not:
    ``SystemExit`` exits with its code (None is 0, a non-integer is printed and gives 1, as Python does),
    ``KeyboardInterrupt`` dies by SIGINT."""
    if isinstance(exc, KeyboardInterrupt):
        return {"exception": "KeyboardInterrupt", "signal": "SIGINT"}
    if not isinstance(exc, SystemExit):
        return None
    code = exc.code
    if code is None:
        status = 0
    elif isinstance(code, int) and not isinstance(code, bool):
        status = code & 0xFF
    else:
        try:
            os.write(2, (safe_repr(code, 1024) if not isinstance(code, str) else code[:1024]).encode("utf-8", "replace") + b"\n")
        except OSError:
            pass
        status = 1
    return {"exception": "SystemExit", "code": status}


def main() -> None:
    """Entry point after ``__main__`` has fixed ``sys.path`` and checked the cookie."""
    cookie = os.environ.get("ASTRABOX_HARNESS_COOKIE", "")
    for fd in (wire.IN_FD, wire.OUT_FD):
        try:
            os.set_inheritable(fd, False)
        except OSError:
            wire.die("descriptor %d is not open: the harness must be started by astrabox" % fd, 2)
    apply_limits()
    become_host()
    try:
        faulthandler.register(signal.SIGUSR1, file=2, all_threads=True)
    except (AttributeError, ValueError, RuntimeError, OSError):
        pass
    sdk_dir = os.path.dirname(os.path.abspath(astrabox.__file__))
    observer = Observer.for_process(sdk_dir)  # prepared by the fork server, if any
    observer.install()
    egress.install(CURRENT_CALL, observer.units.tag)  # declared services for clients that ignore HTTP(S)_PROXY (docs/services.md)
    observer.install_trust(egress.declared)  # the run's CA for every client library; failed verifications
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
    start_profile()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    with observer.quiet():  # opening /proc/self/io is the harness's own business
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
