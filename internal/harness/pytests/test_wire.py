"""wire: the length-prefixed JSON frames between Go and the harness. Frames are decoded however the bytes
arrive (split anywhere, several in one read, larger than one read), a corrupt stream (a length above the limit,
bad JSON, a non-object, end of input inside a frame) ends the process with status 2 and a message on
descriptor 2, end of input between frames is :class:`wire.EndOfRequests`, and writes from several threads never
interleave. What ends a process runs in a child interpreter of the same version."""

import json
import os
import select
import struct
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import runner, wire  # noqa: E402
from astrabox._harness.records import LeftoverTimer, Observations  # noqa: E402

WAIT = 60  # seconds: a bound on a child interpreter, never a pause
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}
LINUX = sys.platform.startswith("linux")


class _IntLike(int):
    """An int subclass: json writes it with int's repr, whatever its own says."""

    def __repr__(self):
        return "not this"


def frame(msg):
    body = json.dumps(msg).encode()
    return struct.pack(">I", len(body)) + body


def run_child(code, *args):
    """Run ``code`` in a child interpreter of this version with the harness importable as ``wire``."""
    prelude = "import os, struct, sys, threading; sys.path.insert(0, sys.argv[1]); from astrabox._harness import wire\n"
    return subprocess.run([sys.executable, "-B", "-c", prelude + code, PYTHON_DIR] + list(args),
                          env=dict(BASE_ENV, PYTHONDONTWRITEBYTECODE="1"), capture_output=True, text=True,
                          timeout=WAIT)


class Pipe:
    """A non-blocking pipe whose read end a :class:`wire.FrameReader` reads, as the harness reads descriptor 3."""

    def __init__(self, test):
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        test.addCleanup(self.close)

    def write(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.w, view):]

    def close(self):
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass


class EncodeFrame(unittest.TestCase):
    def test_header_is_the_big_endian_length_of_compact_ascii_json(self):
        header, body = wire.encode_frame({"kind": "reply", "id": 7, "text": "caf\u00e9 \ud800"})
        self.assertEqual(header, struct.pack(">I", len(body)))
        self.assertEqual(body, b'{"kind":"reply","id":7,"text":"caf\\u00e9 \\ud800"}')
        body.decode("ascii")  # a lone surrogate from a provider string stays encodable

    def test_non_finite_numbers_are_refused_not_sent_as_invalid_json(self):
        with self.assertRaises(ValueError):
            wire.encode_frame({"kind": "reply", "value": float("nan")})

    def test_the_reused_encoder_writes_what_json_dumps_writes_and_refuses_cycles(self):
        # The frame encoder is made once (wire._dumps); its bytes must be json.dumps's with the frame's options,
        # message after message, and a cycle must still be refused (its markers start empty each time).
        msgs = [{"kind": "reply", "value": {"a": [1, 2.5, None, True, "\u00e9"], "b": {}}, "n": -3},
                {"kind": "background", "observations": {"logs": [], "dropped": 0}}]
        for msg in msgs * 2:
            self.assertEqual(wire.encode_frame(msg)[1], json.dumps(
                msg, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii"))
        cyc = {"kind": "reply"}
        cyc["self"] = cyc
        with self.assertRaises(ValueError):
            wire.encode_frame(cyc)
        self.assertEqual(wire.encode_frame(msgs[0])[1], json.dumps(
            msgs[0], ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii"))

    def test_the_top_level_writer_writes_what_json_dumps_writes(self):
        # encode_frame writes a message's top level itself (constants, small integers, plain strings, empty lists,
        # Verbatim text) and each nested value through the encoder: the bytes must stay json.dumps's.
        def dumps(msg):
            return json.dumps(msg, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
        odd = {"kind": "reply", "id": 2 ** 70, "n": -7, "f": 1.5, "e": 1e-7, "t": True, "u": False, "z": None,
               "s": "\u00e9<>&\u2028\ud800\x00\"\\", "l": [], "full": [1, "a"], "tuple": (1, 2), "d": {},
               "nested": {"x": [{"y": None}]}, "\u00e9 key": 1, "flag": _IntLike(3)}
        for msg in (odd, {}, {"kind": "returned", "id": 4}, {1: "int key"}, {"a": None, 2: "mixed keys"}, ["a list"]):
            self.assertEqual(wire.encode_frame(msg)[1], dumps(msg), msg)
        for bad in ({"kind": "reply", "f": float("nan")}, {"kind": "reply", "v": [float("inf")]}):
            with self.assertRaises(ValueError):
                wire.encode_frame(bad)
        with self.assertRaises(TypeError):
            wire.encode_frame({"kind": "reply", "v": object()})
        with self.assertRaises(TypeError):
            wire.encode_frame({"kind": "reply", ("tuple", "key"): 1})
        cyc = {"kind": "reply"}
        cyc["self"] = cyc
        with self.assertRaises(ValueError):
            wire.encode_frame(cyc)

    def test_empty_observations_are_written_as_their_constant_text(self):
        # A reply with no observations carries wire.EMPTY_OBSERVATIONS, Verbatim: the same bytes as the record's
        # own wire form, so Go's decoder (which recognises them by their bytes) sees nothing new.
        empty = Observations().wire()
        self.assertEqual(wire.EMPTY_OBSERVATIONS, json.dumps(empty, ensure_ascii=True, separators=(",", ":")))
        reply = {"kind": "reply", "id": 7, "ok": True, "value": {"type": "bool", "value": True}, "error": None,
                 "observations": empty, "markers": False, "waited_units": [], "coverage": None}
        fast = dict(reply, observations=wire.EMPTY_OBSERVATIONS)
        self.assertEqual(wire.encode_frame(fast), wire.encode_frame(reply))
        self.assertIs(runner._observations_wire(Observations()), wire.EMPTY_OBSERVATIONS)
        logged = Observations(dropped=1)
        self.assertEqual(runner._observations_wire(logged), logged.wire())
        left = Observations()
        left.leftovers.timers.append(LeftoverTimer(callback="t", when_s=1.0))
        self.assertEqual(runner._observations_wire(left), left.wire())

    def test_a_message_above_the_limit_is_frame_too_large(self):
        small = {"kind": "reply", "value": "x" * 20}
        size = len(wire.encode_frame(small)[1])
        with mock.patch.object(wire, "MAX_FRAME", size):
            wire.encode_frame(small)  # exactly at the limit: allowed
        with mock.patch.object(wire, "MAX_FRAME", size - 1):
            with self.assertRaises(wire.FrameTooLarge) as cm:
                wire.encode_frame(small)
        self.assertIn("%d bytes" % size, str(cm.exception))


def no_die(message, status):
    raise AssertionError("the harness would have ended with status %d: %s" % (status, message))


_no_die = mock.patch.object(wire, "die", no_die)


def setUpModule():
    # In this process a regression that ends the process would end the whole test run: make it the failure of
    # the test that met it. Child interpreters import their own, real ``die``.
    _no_die.start()


def tearDownModule():
    _no_die.stop()


class FrameReader(unittest.TestCase):
    def test_nothing_to_read_yet_is_no_message(self):
        pipe = Pipe(self)
        self.assertEqual(wire.FrameReader().read(pipe.r), [])

    def test_a_frame_split_anywhere_is_returned_once_complete(self):
        data = frame({"kind": "call", "id": 1, "args": {"x": "y"}})
        for cut in (1, 3, 4, 5, len(data) - 1):
            pipe = Pipe(self)
            reader = wire.FrameReader()
            pipe.write(data[:cut])
            self.assertEqual(reader.read(pipe.r), [], "cut at %d" % cut)
            pipe.write(data[cut:])
            self.assertEqual(reader.read(pipe.r), [{"kind": "call", "id": 1, "args": {"x": "y"}}], "cut at %d" % cut)

    def test_several_frames_in_one_read_come_out_in_order_and_a_partial_tail_waits(self):
        pipe = Pipe(self)
        reader = wire.FrameReader()
        third = frame({"kind": "shutdown"})
        pipe.write(frame({"kind": "call", "id": 1}) + frame({"kind": "cancel", "id": 1}) + third[:6])
        self.assertEqual(reader.read(pipe.r), [{"kind": "call", "id": 1}, {"kind": "cancel", "id": 1}])
        pipe.write(third[6:])
        self.assertEqual(reader.read(pipe.r), [{"kind": "shutdown"}])

    def test_a_frame_larger_than_one_read_is_assembled(self):
        pipe = Pipe(self)
        reader = wire.FrameReader()
        msg = {"kind": "sandbox_reply", "id": 3, "ok": True, "value": {"content_b64": "A" * (300 << 10)}}
        data = frame(msg)
        got = []
        writer = threading.Thread(target=pipe.write, args=(data,))  # the pipe holds less than the frame
        writer.start()
        reads = 0
        while not got:
            select.select([pipe.r], [], [], WAIT)
            got = reader.read(pipe.r)
            reads += 1
            self.assertLess(reads, 10000)
        writer.join(WAIT)
        self.assertEqual(got, [msg])
        self.assertGreater(reads, 1)

    def test_end_of_input_between_frames_is_end_of_requests(self):
        pipe = Pipe(self)
        reader = wire.FrameReader()
        pipe.write(frame({"kind": "call", "id": 2}))
        os.close(pipe.w)
        self.assertEqual(reader.read(pipe.r), [{"kind": "call", "id": 2}])
        with self.assertRaises(wire.EndOfRequests):
            reader.read(pipe.r)


READ_ALL = """
r, w = os.pipe()
os.write(w, bytes.fromhex(sys.argv[2]))
os.close(w)
reader = wire.FrameReader()
while True:
    for msg in reader.read(r):
        print("message", msg, flush=True)
"""


class CorruptStream(unittest.TestCase):
    def assert_corrupt(self, data, message):
        proc = run_child(READ_ALL, data.hex())
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("astrabox harness: harness protocol corrupted: " + message, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)
        return proc

    def test_end_of_input_inside_a_frame(self):
        proc = self.assert_corrupt(frame({"kind": "call", "id": 1}) + frame({"kind": "call", "id": 2})[:-1],
                                   "request stream ended inside a frame")
        self.assertIn("message {'kind': 'call', 'id': 1}", proc.stdout)  # the complete frame still came out
        self.assert_corrupt(b"\x00\x00", "request stream ended inside a frame")

    def test_a_length_above_the_limit_ends_at_once(self):
        # The header alone is enough: the harness must not wait for (or allocate) 64 MiB more.
        self.assert_corrupt(struct.pack(">I", wire.MAX_FRAME + 1), "frame of %d bytes exceeds the limit"
                            % (wire.MAX_FRAME + 1))

    def test_bad_json_and_non_objects(self):
        for body in (b"{not json", b"\xff\xfe", b"[1, 2]", b'"call"', b'{"id": 1}', b'{"kind": 3}'):
            with self.subTest(body=body):
                expected = "not UTF-8 JSON" if body in (b"{not json", b"\xff\xfe") else "not an object with a kind"
                self.assert_corrupt(struct.pack(">I", len(body)) + body, "a request is " + expected)


class Writer(unittest.TestCase):
    def pipe(self, *senders):
        """A pipe with a Writer on its write end, and threads that send through it. Cleanup closes the read end
        first, so that a sender still blocked on a failed test meets a closed pipe and ends, then joins them."""
        r, w = os.pipe()
        os.set_blocking(r, False)
        writer = wire.Writer(w)
        threads = [threading.Thread(target=send, args=(writer,)) for send in senders]

        def cleanup():
            os.close(r)
            for t in threads:
                t.join(WAIT)
            os.close(w)

        self.addCleanup(cleanup)
        for t in threads:
            t.start()
        return r, writer, threads

    def read_frames(self, fd, count):
        reader = wire.FrameReader()
        out = []
        while len(out) < count:
            ready, _, _ = select.select([fd], [], [], WAIT)
            self.assertTrue(ready, "timed out waiting for frames")
            out.extend(reader.read(fd))
        return out

    def test_frames_round_trip_and_written_counts_every_byte(self):
        small = {"kind": "reply", "id": 1, "ok": True, "value": None}
        big = {"kind": "reply", "id": 2, "ok": True, "value": "v" * (200 << 10)}  # past the one-write size
        sizes = [4 + len(wire.encode_frame(m)[1]) for m in (small, big)]
        r, writer, (sender,) = self.pipe(lambda writer: (writer.send(small), writer.send(big)))
        self.assertEqual(self.read_frames(r, 2), [small, big])
        sender.join(WAIT)
        self.assertEqual(writer.written, sum(sizes))

    def test_frames_from_several_threads_never_interleave(self):
        r, writer, threads = self.pipe(*[
            lambda writer, t=t: [writer.send({"kind": "k", "t": t, "i": i, "pad": "p" * (70000 if i % 3 == 0 else 10)})
                                 for i in range(12)]
            for t in range(4)])
        got = self.read_frames(r, 48)
        for t in threads:
            t.join(WAIT)
        for t in range(4):
            self.assertEqual([m["i"] for m in got if m["t"] == t], list(range(12)))

    def test_a_closed_writer_sends_nothing(self):
        r, writer, _ = self.pipe()
        writer.close()
        writer.send({"kind": "reply", "id": 1})
        with self.assertRaises(BlockingIOError):
            os.read(r, 10)
        self.assertEqual(writer.written, 0)

    def test_a_reply_channel_gone_ends_the_process_with_status_3(self):
        proc = run_child("r, w = os.pipe(); os.close(r); wire.Writer(w).send({'kind': 'reply'}); print('survived')")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("astrabox harness: the reply channel is gone", proc.stderr)
        self.assertNotIn("survived", proc.stdout)


WATCH = """
r, w = os.pipe()
threading.Thread(target=wire.watch_hangup, args=(r, 50, 50), daemon=True).start()
if sys.argv[2] == "hangup":
    os.close(w)
else:
    os.close(r)
print("blocked", flush=True)
threading.Event().wait(%d)  # the event loop, blocked by a provider
print("not ended", flush=True)
""" % WAIT


@unittest.skipUnless(LINUX, "poll hang-up semantics of pipes are Linux's")
class WatchHangup(unittest.TestCase):
    def test_go_going_away_ends_a_blocked_process(self):
        proc = run_child(WATCH, "hangup")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "blocked\n")

    def test_a_provider_closing_the_request_descriptor_is_reported(self):
        proc = run_child(WATCH, "closed")
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("astrabox harness: the provider closed descriptor", proc.stderr)
        self.assertEqual(proc.stdout, "blocked\n")


@unittest.skipUnless(os.path.exists("/proc/self/io"), "WriteMeter reads /proc/self/io")
class WriteMeter(unittest.TestCase):
    def setUp(self):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        self.r = r
        self.writer = wire.Writer(w)
        self.meter = wire.WriteMeter(self.writer)
        self.addCleanup(lambda: self.meter._fd is not None and os.close(self.meter._fd))

    def drain(self):
        os.set_blocking(self.r, False)
        try:
            while os.read(self.r, 1 << 16):
                pass
        except BlockingIOError:
            pass

    def test_never_quiet_before_the_first_sync(self):
        self.assertFalse(self.meter.quiet_since_sync())

    def test_only_the_harness_frames_and_markers_is_quiet_anything_else_is_not(self):
        self.meter.quiet_since_sync()
        self.meter.synced()
        self.writer.send({"kind": "reply", "id": 1})
        self.drain()
        self.assertTrue(self.meter.quiet_since_sync())
        self.meter.synced()
        with tempfile.TemporaryFile() as fh:
            self.meter.quiet_since_sync()
            os.write(fh.fileno(), b"marker")  # the harness's own sync marker, accounted as extra
            self.meter.synced(extra=len(b"marker"))
            self.assertTrue(self.meter.quiet_since_sync())
            self.meter.synced()
            os.write(fh.fileno(), b"a provider's log line\n")  # nothing the harness wrote
            self.assertFalse(self.meter.quiet_since_sync())


if __name__ == "__main__":
    unittest.main()
