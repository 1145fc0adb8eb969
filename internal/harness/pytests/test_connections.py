"""Connection records: the harness tags each loopback TCP connection with its local port, the call whose
code opened it and the provider line that did (docs/protocol.md, "Connections")."""

import os
import socket
import sys
import unittest

from harnessclient import SRC, Harness
from test_protocol import marker_line, session_args

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness import connections  # noqa: E402

GOOD = os.path.join(SRC, "fixprov", "good.py")


class TagTest(unittest.TestCase):
    def test_unbound_loopback_socket_is_bound_first(self):
        with socket.socket() as sock:
            seq, port, dest = connections.tag(sock, ("127.0.0.1", 8080))
            self.assertEqual(sock.getsockname()[1], port)
            self.assertNotEqual(port, 0)
            self.assertEqual(dest, 8080)
            self.assertIsNone(connections.tag(sock, ("127.0.0.1", 8080)))  # a polled connect_ex: one connection
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            seq2, port2, _ = connections.tag(other, ("localhost", 8080))  # already bound: kept, numbered on
            self.assertEqual(other.getsockname()[1], port2)
            self.assertGreater(seq2, seq)

    def test_other_connects_are_left_alone(self):
        with socket.socket() as sock:
            self.assertIsNone(connections.tag(sock, ("192.0.2.7", 443)))  # not loopback
            self.assertEqual(sock.getsockname()[1], 0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            self.assertIsNone(connections.tag(udp, ("127.0.0.1", 53)))
            self.assertEqual(udp.getsockname()[1], 0)
        self.assertIsNone(connections.tag(object(), ("127.0.0.1", 1)))
        with socket.socket() as sock:
            self.assertIsNone(connections.tag(sock, "127.0.0.1:80"))


class ConnectionRecordTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = Harness()
        cls.h.hello()
        reply = cls.h.load("fixprov.good:Good")
        assert reply["ok"], reply

    @classmethod
    def tearDownClass(cls):
        cls.h.close()

    def plan(self, mode):
        return self.h.call("plan", {"config": {"mode": mode}})

    def test_raw_socket_connect_is_tagged_with_call_and_line(self):
        reply = self.plan("raw-connect")
        value = reply["value"]["declaration"]
        conns = reply["observations"].get("connections", [])
        mine = [c for c in conns if c["port"] == value["local"]]
        self.assertEqual(len(mine), 1, conns)
        c = mine[0]
        self.assertEqual(c["dest_port"], value["dest"])
        self.assertEqual((c["file"], c["line"], c["function"]), (GOOD, marker_line(GOOD, "RAW_CONNECT_LINE"), "raw_connect"))
        self.assertEqual((c["call"], c["after_return"]), (reply["id"], False))
        self.assertGreater(c["seq"], 0)

    def test_connection_of_a_thread_after_return_names_the_starting_call(self):
        started = self.plan("late-connect")
        self.assertEqual(started["observations"].get("connections", []), [])
        released = self.plan("release-connect")
        local = released["value"]["declaration"]["local"]
        self.assertEqual([c for c in released["observations"].get("connections", []) if c["port"] == local], [])
        bg = self.h.wait_background(lambda m: any(c["port"] == local for c in m["observations"].get("connections", [])))
        c = [c for c in bg["observations"]["connections"] if c["port"] == local][0]
        self.assertEqual((c["call"], c["after_return"]), (started["id"], True))
        self.assertEqual((c["file"], c["line"]), (GOOD, marker_line(GOOD, "RAW_CONNECT_LINE")))

    def test_asyncio_stream_connect_is_tagged(self):
        reply = self.h.call("prepare_session", session_args("stream-connect"))
        self.assertTrue(reply["ok"], reply)
        local = int(reply["value"]["environment"]["LOCAL_PORT"])
        mine = [c for c in reply["observations"].get("connections", []) if c["port"] == local]
        self.assertEqual(len(mine), 1, reply["observations"])
        self.assertEqual((mine[0]["file"], mine[0]["line"], mine[0]["function"]),
                         (GOOD, marker_line(GOOD, "STREAM_LINE"), "prepare_session"))
        self.assertEqual(mine[0]["call"], reply["id"])

    def test_connect_on_an_executor_thread_names_the_submitting_line(self):
        # Only library code is on the executor thread's stack: the line that submitted the job stands in.
        reply = self.h.call("prepare_session", session_args("executor-connect"))
        self.assertTrue(reply["ok"], reply)
        local = int(reply["value"]["environment"]["LOCAL_PORT"])
        mine = [c for c in reply["observations"].get("connections", []) if c["port"] == local]
        self.assertEqual(len(mine), 1, reply["observations"])
        self.assertEqual((mine[0]["file"], mine[0]["line"], mine[0]["function"]),
                         (GOOD, marker_line(GOOD, "EXECUTOR_LINE"), "prepare_session"))
        self.assertEqual(mine[0]["call"], reply["id"])


if __name__ == "__main__":
    unittest.main()
