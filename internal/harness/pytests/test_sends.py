"""Per-send attribution: the harness counts the plaintext each call's code writes on a tagged loopback
connection and reports where each call's run of bytes starts (docs/protocol.md, "Sends").

The tests meter real sockets connected to a loopback sink that keeps every byte it reads, then compare the
runs reported with the offsets at which each call's bytes really arrived. TLS tests use a certificate the
Go test writes to $HARNESS_TLS_DIR (skipped when it is unset)."""

import asyncio
import contextvars
import os
import socket
import ssl
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness import connections, sends  # noqa: E402
from astrabox._harness.routing import CURRENT_CALL  # noqa: E402

TLS_DIR = os.environ.get("HARNESS_TLS_DIR", "")

sends.install()  # the ssl and asyncio hooks, as the observer installs them in a replica


class Sink:
    """A loopback server that reads everything each connection sends (decrypted, with a TLS context)."""

    def __init__(self, tls=None):
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.port = self.srv.getsockname()[1]
        self.tls = tls
        self.data = b""
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.srv.accept()
        if self.tls is not None:
            conn = self.tls.wrap_socket(conn, server_side=True)
        with conn:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                self.data += chunk
        self.done.set()

    def wait(self):
        self.assert_done = self.done.wait(10)
        self.srv.close()
        return self.data


class Recorder:
    """Collects the runs the meters report, with the call in the ContextVar when each was reported."""

    def __init__(self):
        self.runs = []
        self.records = []
        self.lock = threading.Lock()

    def __call__(self, run):
        with self.lock:
            self.runs.append((run.seq, run.offset, run.lost, CURRENT_CALL.get()))
            self.records.append(run)


def finish(sock, sink):
    """End the client's side and wait for the sink to read all (a close with unread session tickets in
    the client's buffer would reset the connection and lose the sink's last bytes)."""
    sock.shutdown(socket.SHUT_WR)
    data = sink.wait()
    sock.close()
    return data


def in_call(call, fn, *args):
    ctx = contextvars.copy_context()
    ctx.run(CURRENT_CALL.set, call)
    return ctx.run(fn, *args)


def tls_contexts():
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(os.path.join(TLS_DIR, "cert.pem"), os.path.join(TLS_DIR, "key.pem"))
    client = ssl.create_default_context(cafile=os.path.join(TLS_DIR, "ca.pem"))
    return server, client


class MeterTest(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder()
        self.prev = sends.emit
        sends.emit = self.rec

    def tearDown(self):
        sends.emit = self.prev

    def tagged(self, sink):
        sock = socket.socket()
        tagged = connections.tag(sock, ("127.0.0.1", sink.port))
        self.assertIsNotNone(tagged)
        sends.meter_socket(sock, tagged[0])
        sock.connect(("127.0.0.1", sink.port))
        return sock, tagged[0]

    def assertRuns(self, seq, want):
        self.assertEqual([(o, c) for s, o, lost, c in self.rec.runs if s == seq and not lost], want)

    def test_plain_socket_runs_per_call(self):
        sink = Sink()
        sock, seq = self.tagged(sink)
        self.assertIsInstance(sock, socket.socket)
        in_call(1, sock.sendall, b"GET /a HTTP/1.1\r\n\r\n")
        in_call(1, sock.send, b"more")  # same call: no new run
        in_call(2, sock.sendmsg, [b"PUT /b", b" HTTP/1.1\r\n\r\n"])
        f = in_call(3, sock.makefile, "wb")
        in_call(3, f.write, b"DELETE")
        in_call(3, f.flush)
        in_call(None, sock.sendall, b"!")
        f.close()
        sock.close()
        data = sink.wait()
        self.assertEqual(data, b"GET /a HTTP/1.1\r\n\r\nmorePUT /b HTTP/1.1\r\n\r\nDELETE!")
        self.assertRuns(seq, [(0, 1), (data.index(b"PUT"), 2), (data.index(b"DELETE"), 3), (len(data) - 1, None)])
        # Each run ends where the next begins (the same call's writes extend it while unsent).
        self.assertEqual([(r.offset, r.end) for r in self.rec.records if r.seq == seq],
                         [(0, data.index(b"PUT")), (data.index(b"PUT"), data.index(b"DELETE")),
                          (data.index(b"DELETE"), len(data) - 1), (len(data) - 1, len(data))])

    def test_a_sent_run_is_not_extended(self):
        # Once a run's record is written out, the same call's later bytes start a run of their own: bytes
        # whose record is lost with its message are then in no run, not in an earlier one.
        sink = Sink()
        sock, seq = self.tagged(sink)
        in_call(1, sock.sendall, b"abc")
        self.rec.records[-1].wire()
        in_call(1, sock.sendall, b"de")
        in_call(1, sock.sendall, b"f")
        sock.close()
        sink.wait()
        self.assertEqual([(r.offset, r.end, r.sealed) for r in self.rec.records if r.seq == seq],
                         [(0, 3, True), (3, 6, False)])
        self.assertEqual(self.rec.records[-1].wire()["end"], 6)

    def test_unmetered_sockets_keep_their_class(self):
        with socket.socket() as other:
            self.assertIs(type(other), socket.socket)
        sink = Sink()
        sock, _ = self.tagged(sink)
        self.assertIsNot(type(sock), socket.socket)
        self.assertIsInstance(sock, socket.socket)
        sock.close()
        sink.wait()

    def test_failed_sendall_loses_the_offset(self):
        sink = Sink()
        sock, seq = self.tagged(sink)
        in_call(1, sock.sendall, b"x")
        sock.close()
        with self.assertRaises(OSError):
            in_call(2, sock.sendall, b"y")
        self.assertEqual([(o, lost) for s, o, lost, _ in self.rec.runs if s == seq], [(0, False), (1, True)])
        sink.wait()

    @unittest.skipUnless(TLS_DIR, "no certificate in $HARNESS_TLS_DIR")
    def test_ssl_socket_counts_plaintext(self):
        server, client = tls_contexts()
        sink = Sink(server)
        raw, seq = self.tagged(sink)
        sock = client.wrap_socket(raw, server_hostname="localhost")
        self.assertIsInstance(sock, ssl.SSLSocket)
        in_call(1, sock.sendall, b"GET /a HTTP/1.1\r\n\r\n")
        in_call(2, sock.write, b"PUT /b HTTP/1.1\r\n\r\n")
        in_call(3, sock.send, b"POST")
        data = finish(sock, sink)
        self.assertEqual(data, b"GET /a HTTP/1.1\r\n\r\nPUT /b HTTP/1.1\r\n\r\nPOST")
        # The handshake's ciphertext is not counted: runs start where each call's plaintext starts.
        self.assertRuns(seq, [(0, 1), (data.index(b"PUT"), 2), (data.index(b"POST"), 3)])

    @unittest.skipUnless(TLS_DIR, "no certificate in $HARNESS_TLS_DIR")
    def test_ssl_socket_wrapped_before_connect(self):
        server, client = tls_contexts()
        sink = Sink(server)
        sock = client.wrap_socket(socket.socket(), server_hostname="localhost")
        seq = connections.tag(sock, ("127.0.0.1", sink.port))[0]
        sends.meter_socket(sock, seq)
        sock.connect(("127.0.0.1", sink.port))
        in_call(5, sock.sendall, b"abc")
        self.assertEqual(finish(sock, sink), b"abc")
        self.assertRuns(seq, [(0, 5)])


class AsyncioMeterTest(unittest.TestCase):
    """Streams over selector transports, plain and TLS: a run starts where each task's write began, even
    when the transport sends it later from its buffer."""

    def setUp(self):
        self.rec = Recorder()
        self.prev = sends.emit
        sends.emit = self.rec

    def tearDown(self):
        sends.emit = self.prev

    def play(self, sink, ssl_ctx=None, start_tls=False):
        seqs = []

        def on_connect(sock):
            tagged = connections.tag(sock, ("127.0.0.1", sink.port))
            if tagged is not None:
                sends.meter_socket(sock, tagged[0])
                seqs.append(tagged[0])

        async def write(writer, call, parts):
            CURRENT_CALL.set(call)
            if len(parts) > 1:
                writer.writelines(parts)
            else:
                writer.write(parts[0])
            await writer.drain()

        async def main():
            sock = socket.socket()
            sock.setblocking(False)
            on_connect(sock)
            loop = asyncio.get_running_loop()
            await loop.sock_connect(sock, ("127.0.0.1", sink.port))
            if start_tls:
                reader, writer = await asyncio.open_connection(sock=sock)
                await writer.start_tls(ssl_ctx, server_hostname="localhost")
            else:
                reader, writer = await asyncio.open_connection(
                    sock=sock, ssl=ssl_ctx, server_hostname="localhost" if ssl_ctx else None)
            big = b"B" * (4 << 20)  # more than the socket buffer: the rest is sent from the loop later
            await asyncio.gather(asyncio.create_task(write(writer, 1, [b"GET /a HTTP/1.1\r\n\r\n", big])))
            await asyncio.create_task(write(writer, 2, [b"PUT /b HTTP/1.1\r\n\r\n"]))
            writer.close()
            await writer.wait_closed()

        asyncio.run(main())
        data = sink.wait()
        self.assertEqual(len(seqs), 1)
        head = len(b"GET /a HTTP/1.1\r\n\r\n")
        self.assertEqual(data.index(b"PUT /b"), head + (4 << 20))
        self.assertEqual([(o, c) for s, o, lost, c in self.rec.runs if s == seqs[0] and not lost],
                         [(0, 1), (head + (4 << 20), 2)])

    def test_plain_stream(self):
        self.play(Sink())

    @unittest.skipUnless(TLS_DIR, "no certificate in $HARNESS_TLS_DIR")
    def test_tls_stream(self):
        server, client = tls_contexts()
        self.play(Sink(server), client)

    @unittest.skipUnless(TLS_DIR and sys.version_info >= (3, 11), "no certificate, or no StreamWriter.start_tls")
    def test_start_tls(self):
        server, client = tls_contexts()
        self.play(Sink(server), client, start_tls=True)


if __name__ == "__main__":
    unittest.main()


class HarnessSendsTest(unittest.TestCase):
    """Through a real harness: a connection opened while the provider loads travels in the load reply, and
    each call's writes on it (its own, or a thread's it left running) are reported with the call that wrote
    them, at the right offsets."""

    def test_kept_alive_connection_across_calls(self):
        from harnessclient import Harness

        h = Harness()
        try:
            h.hello()
            loaded = h.load("fixprov.keptalive:KeptAlive")
            self.assertTrue(loaded["ok"], loaded)
            conns = loaded["observations"].get("connections", [])
            self.assertEqual(len(conns), 1, loaded["observations"])
            seq, load_id = conns[0]["seq"], loaded["id"]
            self.assertEqual(conns[0]["call"], load_id)
            first = h.call("plan", {"config": {"mode": "send", "data": "GET /a HTTP/1.1\r\n\r\n"}})
            self.assertEqual(first["value"]["declaration"]["local"], conns[0]["port"])
            self.assertEqual([(s["seq"], s["offset"], s["call"]) for s in first["observations"].get("sends", [])],
                             [(seq, 0, first["id"])])
            again = h.call("plan", {"config": {"mode": "send", "data": "GET /b HTTP/1.1\r\n\r\n"}})
            self.assertEqual([(s["offset"], s["call"]) for s in again["observations"].get("sends", [])],
                             [(19, again["id"])])  # a new call's run starts after the first request
            starter = h.call("plan", {"config": {"mode": "send-later", "data": "PUT /c HTTP/1.1\r\n\r\n"}})
            self.assertEqual(starter["observations"].get("sends", []), [])
            release = h.call("plan", {"config": {"mode": "release"}})
            self.assertEqual(release["observations"].get("sends", []), [])  # not the release's bytes
            bg = h.wait_background(lambda m: m["observations"].get("sends"))
            late = bg["observations"]["sends"]
            self.assertEqual([(s["seq"], s["offset"], s["call"], s["after_return"]) for s in late],
                             [(seq, 38, starter["id"], True)])
        finally:
            h.close()
