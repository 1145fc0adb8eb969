"""Units of work: which unit of a call's work issues a request, and which units the callback waited for
(docs/protocol.md, "Units of work"). The order of events is forced with events and futures, never by sleeping
longer than something else, so each case means the same on a loaded machine."""

import asyncio
import contextvars
import os
import sys
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness.leftovers import Work  # noqa: E402
from astrabox._harness.routing import CURRENT_CALL, Router  # noqa: E402
from astrabox._harness.units import Units  # noqa: E402

UNITS = Units()
WORK = Work(Router(), UNITS)
WORK.install_threads()
UNITS.install()
POOL = ThreadPoolExecutor(max_workers=4)


class Call:
    """Plays one callback the way the runner does: its own task in a context naming the call, a cancel when
    ``cancel`` is set (from the loop), and the waited units when its code ended."""

    def __init__(self, call_id: int) -> None:
        self.id = call_id
        self.tags = []  # (label, X-Astrabox-Work value) as each "write" was issued
        self.lock = threading.Lock()

    def write(self, label: str) -> None:
        with self.lock:
            self.tags.append((label, UNITS.tag()))

    def tag(self, label: str) -> str:
        with self.lock:
            return dict(self.tags)[label]

    async def play(self, body, cancel_when=None):
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        ctx.run(CURRENT_CALL.set, self.id)
        ended = {}

        async def invoke():
            try:
                return await body(self)
            finally:
                ended["waited"] = UNITS.end_call(self.id)

        task = ctx.run(loop.create_task, invoke())
        UNITS.begin_call(self.id, task)
        if cancel_when is not None:
            async def canceller():
                await cancel_when
                task.cancel()

            loop.create_task(canceller())
        try:
            await task
        except asyncio.CancelledError:
            pass
        return ended["waited"]


_ids = iter(range(1, 10**6))
_loop = None


def run(body, cancel=False, after=None):
    """Play ``body`` as a call on the test loop; with ``cancel``, cancel it once ``body`` sets call.ready."""
    call = Call(next(_ids))

    async def main():
        loop = asyncio.get_running_loop()
        call.ready = loop.create_future()
        waited = await call.play(body, call.ready if cancel else None)
        if after is not None:
            await after(call)
        return waited

    return call, _loop.run_until_complete(main())


def unit_of(tag: str) -> int:
    return int(tag.split(";")[0].split(":")[1])


def wait_for_tags(call, timeout=1.0):
    """Give work the callback left running a moment to issue its write."""
    end = time.monotonic() + timeout
    while not call.tags and time.monotonic() < end:
        threading.Event().wait(0.01)


class UnitsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global _loop
        _loop = asyncio.new_event_loop()
        WORK.track_tasks(_loop)

    def test_awaited_to_thread_is_waited(self):
        async def body(call):
            await asyncio.to_thread(call.write, "w")

        call, waited = run(body)
        self.assertTrue(call.tag("w").startswith("job:"))
        self.assertIn(unit_of(call.tag("w")), waited)

    def test_to_thread_cancelled_mid_write_is_not_waited(self):
        release = threading.Event()

        async def body(call):
            def slow():
                call.loop.call_soon_threadsafe(call.ready.set_result, None)
                release.wait(10)
                call.write("w")

            call.loop = asyncio.get_running_loop()
            await asyncio.to_thread(slow)

        async def after(call):
            release.set()
            await asyncio.sleep(0)
            POOL.submit(lambda: None).result()

        call, waited = run(body, cancel=True, after=after)
        wait_for_tags(call)
        self.assertTrue(call.tag("w").startswith("job:"))
        self.assertNotIn(unit_of(call.tag("w")), waited)

    def test_executor_write_that_finished_first_but_was_never_awaited(self):
        async def body(call):
            loop = asyncio.get_running_loop()
            done = threading.Event()

            def write():
                call.write("w")
                done.set()

            loop.run_in_executor(POOL, write)  # never awaited
            await asyncio.to_thread(done.wait, 10)  # the write has happened before the cancel
            call.ready.set_result(None)
            await asyncio.sleep(3600)

        call, waited = run(body, cancel=True)
        self.assertNotIn(unit_of(call.tag("w")), waited)

    def test_thread_joined_on_cancel_is_waited_and_an_abandoned_one_is_not(self):
        for join in (True, False):
            async def body(call, join=join):
                go = threading.Event()
                t = threading.Thread(target=lambda: (go.wait(10), call.write("w")))
                t.start()
                call.ready.set_result(None)
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    go.set()
                    if join:
                        t.join(10)
                    raise

            call, waited = run(body, cancel=True)
            wait_for_tags(call)
            self.assertTrue(call.tag("w").startswith("thread:"))
            self.assertEqual(unit_of(call.tag("w")) in waited, join, call.tags)

    def test_timer_joined_from_an_awaited_job_is_waited(self):
        async def body(call):
            timer = threading.Timer(0.01, call.write, ("w",))
            timer.start()
            await asyncio.get_running_loop().run_in_executor(None, timer.join)

        call, waited = run(body)
        self.assertTrue(call.tag("w").startswith("timer:"))
        self.assertIn(unit_of(call.tag("w")), waited)

    def test_job_awaited_after_it_finished_is_waited(self):
        async def body(call):
            loop = asyncio.get_running_loop()
            done = threading.Event()

            def write():
                call.write("w")
                done.set()

            entry = loop.run_in_executor(POOL, write)
            await asyncio.to_thread(done.wait, 10)
            await asyncio.sleep(0.01)  # the entry's outcome reached the loop while nothing awaited it
            await entry
            late = asyncio.wrap_future(POOL.submit(call.write, "x"))
            await asyncio.to_thread(lambda: POOL.submit(lambda: None).result())
            await asyncio.sleep(0.01)
            late.result()

        call, waited = run(body)
        self.assertIn(unit_of(call.tag("w")), waited)
        self.assertIn(unit_of(call.tag("x")), waited)

    def test_combinators_wait(self):
        async def body(call):
            await asyncio.wait_for(asyncio.to_thread(call.write, "a"), 10)
            await asyncio.gather(asyncio.to_thread(call.write, "b"), asyncio.to_thread(call.write, "c"))
            await asyncio.wait([asyncio.ensure_future(asyncio.to_thread(call.write, "d"))])
            fut = POOL.submit(call.write, "e")
            await asyncio.to_thread(fut.result)

        call, waited = run(body)
        for label in "abcde":
            self.assertIn(unit_of(call.tag(label)), waited, label)

    def test_shield_waited_through_cancel_and_shield_abandoned(self):
        for wait in (True, False):
            async def body(call, wait=wait):
                go = threading.Event()

                def work():
                    go.wait(10)
                    call.write("w")

                task = asyncio.ensure_future(asyncio.to_thread(work))
                call.ready.set_result(None)
                try:
                    await asyncio.shield(task)
                except asyncio.CancelledError:
                    go.set()
                    if wait:
                        while not task.done():
                            try:
                                await asyncio.shield(task)
                            except asyncio.CancelledError:
                                pass
                    raise

            async def after(call):
                for _ in range(100):
                    if call.tags:
                        break
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.01)

            call, waited = run(body, cancel=True, after=after)
            self.assertEqual(unit_of(call.tag("w")) in waited, wait, call.tags)

    def test_task_left_running_writes_after_the_end(self):
        async def body(call):
            async def later():
                await asyncio.sleep(0.01)
                call.write("w")

            asyncio.get_running_loop().create_task(later())

        async def after(call):
            for _ in range(100):
                if call.tags:
                    break
                await asyncio.sleep(0.01)

        call, waited = run(body, after=after)
        tag = call.tag("w")
        self.assertTrue(tag.startswith("task:") and tag.endswith(";after-end"), tag)
        self.assertNotIn(unit_of(tag), waited)

    def test_own_task_is_unit_zero(self):
        async def body(call):
            call.write("w")

        call, waited = run(body)
        self.assertEqual(call.tag("w"), "own:0")
        self.assertEqual(waited, [])


if __name__ == "__main__":
    unittest.main()
