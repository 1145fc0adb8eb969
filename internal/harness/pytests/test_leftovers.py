"""leftovers: what a call left running (threads, executor jobs, tasks, loop timers, child processes), what the
work of a set of calls still runs (``settle``), and when leftover children count as idle. Everything that is
waited for is an event or a process state, polled with a bound; nothing sleeps for a fixed time."""

import asyncio
import contextvars
import os
import subprocess
import sys
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness import leftovers  # noqa: E402
from astrabox._harness.leftovers import IdleWatch, Work  # noqa: E402
from astrabox._harness.records import LIST_LIMIT, LeftoverChild  # noqa: E402
from astrabox._harness.routing import CURRENT_CALL, Router  # noqa: E402

WAIT = 10.0  # seconds: a bound on waiting for an event or a state, never a pause


def wait_until(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.005)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2:].split()[0]


def parked(gate):
    """A provider's worker: waits for the gate."""
    gate.wait(WAIT)


def in_call(call_id, fn, *args):
    ctx = contextvars.copy_context()
    ctx.run(CURRENT_CALL.set, call_id)
    return ctx.run(fn, *args)


class WithWork(unittest.TestCase):
    """A Work whose Thread.start and executor submit wrappers are installed for this class only."""

    @classmethod
    def setUpClass(cls):
        cls.start, cls.submit = threading.Thread.start, ThreadPoolExecutor.submit
        cls.work = Work(Router())
        cls.work.install_threads()

    @classmethod
    def tearDownClass(cls):
        threading.Thread.start, ThreadPoolExecutor.submit = cls.start, cls.submit

    def setUp(self):
        self.loop = asyncio.new_event_loop()
        self.addCleanup(self.loop.close)
        self.gate = threading.Event()
        self.addCleanup(self.gate.set)
        self.work.spawned = False
        self.work.library_file = lambda filename: False

    def start_thread(self, call_id, name="worker", daemon=True):
        t = threading.Thread(target=parked, args=(self.gate,), name=name, daemon=daemon)
        in_call(call_id, t.start)
        self.release_and_join(t)
        return t

    def release_and_join(self, t):
        self.addCleanup(lambda: (self.gate.set(), t.join(WAIT)))


class Leftovers(WithWork):
    def test_nothing_new_is_nothing_left(self):
        before = self.work.snapshot(self.loop)
        self.assertEqual(self.work.leftovers(self.loop, before, 1, set()), (leftovers.Leftovers(), 0))

    def test_a_thread_left_running_and_gone_once_it_ends(self):
        before = self.work.snapshot(self.loop)
        t = self.start_thread(1, name="poller", daemon=False)
        out, cut = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(cut, 0)
        self.assertEqual(len(out.threads), 1)
        th = out.threads[0]
        self.assertEqual((th.name, th.daemon, th.target), ("poller", False, "test_leftovers.parked"))
        self.assertEqual(th.file, __file__)
        self.assertEqual(th.line, parked.__code__.co_firstlineno)
        self.gate.set()
        t.join(WAIT)
        out, _ = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(out.threads, [])

    def test_a_timer_thread_names_its_function_and_a_subclass_its_run(self):
        class Poller(threading.Thread):
            def run(inner):
                parked(self.gate)

        before = self.work.snapshot(self.loop)
        timer = threading.Timer(WAIT, print)
        in_call(1, timer.start)
        self.addCleanup(lambda: (timer.cancel(), timer.join(WAIT)))
        sub = Poller(daemon=True)
        in_call(1, sub.start)
        self.release_and_join(sub)
        out, _ = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(sorted(t.target for t in out.threads),
                         ["builtins.print", "test_leftovers.Leftovers.test_a_timer_thread_names_its_function_and_a_"
                          "subclass_its_run.<locals>.Poller.run"])

    def test_executor_jobs_not_idle_workers(self):
        pool = ThreadPoolExecutor(max_workers=2)
        self.addCleanup(lambda: (self.gate.set(), pool.shutdown(wait=True)))
        in_call(3, pool.submit, int).result(WAIT)  # a worker that is idle afterwards
        before = self.work.snapshot(self.loop)
        running = threading.Event()

        def job(gate):
            running.set()
            gate.wait(WAIT)

        in_call(3, pool.submit, job, self.gate)
        self.assertTrue(running.wait(WAIT))
        out, _ = self.work.leftovers(self.loop, before, 3, set())
        self.assertEqual([(t.name, t.target) for t in out.threads],
                         [("executor job", "test_leftovers.Leftovers.test_executor_jobs_not_idle_workers.<locals>.job")])
        # Another call's leftovers do not list it.
        out, _ = self.work.leftovers(self.loop, before, 4, set())
        self.assertEqual(out.threads, [])

    def test_tasks_and_timers(self):
        async def forever():
            await asyncio.Event().wait()

        def tick():
            pass

        before = self.work.snapshot(self.loop)
        own = self.loop.create_task(asyncio.sleep(WAIT))
        task = self.loop.create_task(forever())
        handle = self.loop.call_later(30, tick)
        self.loop.run_until_complete(asyncio.sleep(0))  # both tasks start: forever waits, sleep sets a timer
        out, _ = self.work.leftovers(self.loop, before, 1, {own})
        self.assertEqual([(t.coro, t.file) for t in out.tasks],
                         [("test_leftovers.Leftovers.test_tasks_and_timers.<locals>.forever", __file__)])
        self.assertEqual([t.callback for t in out.timers], ["test_leftovers.Leftovers.test_tasks_and_timers.<locals>.tick"])
        self.assertGreater(out.timers[0].when_s, 20)
        self.assertLessEqual(out.timers[0].when_s, 30)
        # A library's own timer (its callback in a library file) is its housekeeping, not a leftover.
        self.work.library_file = lambda filename: filename == __file__
        out, _ = self.work.leftovers(self.loop, before, 1, {own})
        self.assertEqual(out.timers, [])
        for t in (own, task):
            t.cancel()
        handle.cancel()
        self.loop.run_until_complete(asyncio.gather(own, task, return_exceptions=True))

    def test_every_way_of_making_a_task_is_seen(self):
        # The harness finds new tasks from asyncio's own registry: a task made by create_task, ensure_future or
        # the Task constructor itself (which no wrapper sees) is a leftover; one of another loop is not.
        async def forever():
            await asyncio.Event().wait()

        other = asyncio.new_event_loop()
        self.addCleanup(other.close)
        before = self.work.snapshot(self.loop)
        made = [self.loop.create_task(forever()), asyncio.ensure_future(forever(), loop=self.loop),
                asyncio.Task(forever(), loop=self.loop)]
        foreign = other.create_task(forever())
        out, _ = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(len(out.tasks), 3)
        again, _ = self.work.leftovers(self.loop, self.work.snapshot(self.loop), 2, set())
        self.assertEqual(again.tasks, [])  # what was alive before the call is never its leftover
        for t in made:
            t.cancel()
        self.loop.run_until_complete(asyncio.gather(*made, return_exceptions=True))
        foreign.cancel()
        other.run_until_complete(asyncio.gather(foreign, return_exceptions=True))
        out, _ = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(out.tasks, [])  # done tasks are not left running

    def test_bounds_cut_and_count(self):
        before = self.work.snapshot(self.loop)
        handles = [self.loop.call_later(60, print) for _ in range(LIST_LIMIT + 7)]
        out, cut = self.work.leftovers(self.loop, before, 1, set())
        self.assertEqual(cut, 7)
        self.assertEqual(len(out.timers), len(handles) - 7)
        for h in handles:
            h.cancel()

    def test_a_thread_whose_hash_raises_costs_one_dropped_entry_not_the_harness(self):
        class Unhashable(threading.Thread):
            broken = False

            def __hash__(self):
                if self.broken:
                    raise RuntimeError("no hash")
                return id(self)

        t = Unhashable(target=parked, args=(self.gate,), daemon=True)
        t.start()
        t.broken = True
        self.addCleanup(setattr, t, "broken", False)
        self.release_and_join(t)
        before = self.work.snapshot(self.loop)
        self.assertEqual(before, leftovers.Snapshot(set(), set(), set(), set()))
        self.assertEqual(self.work.safe_leftovers(self.loop, before, 1, set()), (leftovers.Leftovers(), 1))


class WorkOf(WithWork):
    def test_the_work_of_calls_includes_threads_their_threads_started(self):
        inner_started = threading.Event()

        def outer():
            threading.Thread(target=parked, args=(self.gate,), name="grandchild", daemon=True).start()
            inner_started.set()
            parked(self.gate)

        t = threading.Thread(target=outer, name="child", daemon=True)
        in_call(7, t.start)
        self.release_and_join(t)
        other = self.start_thread(8, name="other-call")
        self.assertTrue(inner_started.wait(WAIT))
        out = self.work.work_of(self.loop, {7})
        self.assertEqual(sorted(th.name for th in out.threads), ["child", "grandchild"])
        self.assertEqual([th.name for th in self.work.work_of(self.loop, {8}).threads], ["other-call"])
        self.assertTrue(self.work.work_of(self.loop, {9}).empty())
        self.gate.set()
        other.join(WAIT)
        t.join(WAIT)
        wait_until(lambda: self.work.work_of(self.loop, {7, 8}).empty(), "the calls' threads to end")

    def test_tasks_and_timers_of_a_call(self):
        self.work.track_tasks(self.loop)
        started = asyncio.Event()

        async def waiter():
            started.set()
            await asyncio.Event().wait()

        def tick():
            pass

        async def call_body():
            asyncio.get_running_loop().call_later(45, tick)
            return asyncio.create_task(waiter())

        task = in_call(11, self.loop.run_until_complete, call_body())
        self.loop.run_until_complete(started.wait())
        out = self.work.work_of(self.loop, {11})
        self.assertEqual([t.coro for t in out.tasks], ["WorkOf.test_tasks_and_timers_of_a_call.<locals>.waiter"])
        self.assertEqual([t.callback for t in out.timers], ["test_leftovers.WorkOf.test_tasks_and_timers_of_a_call.<locals>.tick"])
        self.assertTrue(self.work.work_of(self.loop, {12}).empty())
        task.cancel()
        self.loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
        self.assertEqual(self.work.work_of(self.loop, {11}).tasks, [])


class Children(WithWork):
    def spawn(self, *argv, **kwargs):
        proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, **kwargs)
        self.addCleanup(lambda: (proc.kill(), proc.communicate(timeout=WAIT)))
        return proc

    def test_a_child_left_running_and_the_call_it_belongs_to(self):
        self.work.spawned = True  # as after the provider's first spawn: the snapshot lists the children alive
        before = self.work.snapshot(self.loop)
        proc = self.spawn("sleep", "30")
        out, _ = self.work.leftovers(self.loop, before, 5, set())
        self.assertEqual(out.children, [LeftoverChild(proc.pid, "sleep 30")])
        self.assertEqual(self.work.children_of[5], [proc.pid])
        self.assertEqual(self.work.work_of(self.loop, {5}).children, [LeftoverChild(proc.pid, "sleep 30")])
        self.assertEqual(self.work.work_of(self.loop, {6}).children, [])
        proc.kill()
        proc.wait(WAIT)
        self.assertEqual(self.work.work_of(self.loop, {5}).children, [])

    def test_a_zombie_is_not_a_child_process(self):
        proc = self.spawn("true")
        wait_until(lambda: proc_state(proc.pid) == b"Z", "the child to exit")
        self.assertNotIn(proc.pid, leftovers.child_processes())
        self.assertIsNone(leftovers.child_activity(2 ** 22 + 1))  # no such pid

    def test_idle_only_after_the_window_with_unchanged_cpu(self):
        idle = self.spawn("sleep", "30")
        wait_until(lambda: proc_state(idle.pid) == b"S", "sleep to sleep")
        busy, _ = leftovers.child_activity(idle.pid)
        self.assertFalse(busy)
        watch = IdleWatch()
        kids = [LeftoverChild(idle.pid, "sleep 30")]
        self.assertFalse(watch.all_idle(kids, 100.0))  # first look: not yet idle for a window
        self.assertFalse(watch.all_idle(kids, 100.0 + leftovers.IDLE_WINDOW / 2))
        self.assertTrue(watch.all_idle(kids, 100.0 + leftovers.IDLE_WINDOW))

    def test_a_child_holding_a_socket_or_with_children_is_busy(self):
        code = "import socket, sys; s = socket.socket(); print('ready', flush=True); sys.stdin.read()"
        holder = self.spawn(sys.executable, "-B", "-c", code, stdout=subprocess.PIPE)
        self.assertEqual(holder.stdout.readline().strip(), b"ready")
        wait_until(lambda: proc_state(holder.pid) == b"S", "the holder to block")
        self.assertTrue(leftovers.child_activity(holder.pid)[0])
        code = "import subprocess, sys; p = subprocess.Popen(['sleep', '30']); print('ready', flush=True); sys.stdin.read(); p.kill()"
        parent = self.spawn(sys.executable, "-B", "-c", code, stdout=subprocess.PIPE)
        self.assertEqual(parent.stdout.readline().strip(), b"ready")
        wait_until(lambda: proc_state(parent.pid) == b"S", "the parent to block")
        self.assertTrue(leftovers.child_activity(parent.pid)[0])
        watch = IdleWatch()
        kids = [LeftoverChild(parent.pid, "python"), LeftoverChild(2 ** 22 + 1, "gone")]
        self.assertFalse(watch.all_idle(kids, 0.0))
        self.assertFalse(watch.all_idle(kids, 10.0))  # busy never becomes idle by waiting
        parent.communicate(timeout=WAIT)
        holder.communicate(timeout=WAIT)
        self.assertEqual(parent.returncode, 0)


class Helpers(unittest.TestCase):
    def test_callback_file_through_partials_and_methods(self):
        import functools

        class C:
            def m(self):
                pass

        self.assertEqual(leftovers._callback_file(functools.partial(C().m)), __file__)
        self.assertEqual(leftovers._callback_file(print), "")
        self.assertEqual(leftovers.loop_timers(object()), [])


if __name__ == "__main__":
    unittest.main()
