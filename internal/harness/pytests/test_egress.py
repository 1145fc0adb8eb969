"""egress: name resolution and connects of declared services go to their listeners on the proxy, everything
else that is not loopback is refused and reported. The router is exercised directly (``egress._router`` set
for one test, then cleared); ``install``, which replaces ``socket`` functions process-wide, runs in a child
interpreter so that no other suite of this process sees it."""

import errno
import json
import os
import socket
import subprocess
import sys
import threading
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import egress  # noqa: E402

WAIT = 10  # seconds: a bound on waiting for an event, never a pause


class Listener:
    """A loopback listener that accepts connections and keeps the first bytes each one sent."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.got = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(WAIT)
                try:
                    data = conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    data = b""
            self.received.append(data)
            self.got.set()

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (Linux), so the thread ends
        except OSError:
            pass
        self.sock.close()
        self.thread.join(WAIT)


class RouterTable(unittest.TestCase):
    def test_routes_aliases_and_bad_entries(self):
        r = egress.Router({"API.Example:443": "127.0.0.1:9001", "[::1]:80": "127.0.0.1:9002", "noport": "x:1",
                           "h:1": "bad"}, None, True)
        self.assertEqual(r.routes, {("api.example", 443): ("127.0.0.1", 9001), ("::1", 80): ("127.0.0.1", 9002)})
        self.assertEqual(r.declared_names, {"api.example", "::1"})
        self.assertEqual(sorted(r.aliases), ["127.77.0.2", "127.77.0.3"])
        alias = r.alias_of[("api.example", 443)]
        self.assertEqual(r.route(alias, None), ("127.0.0.1", 9001))  # an alias routes whatever the port
        self.assertEqual(r.route(alias, 1234), ("127.0.0.1", 9001))
        self.assertEqual(r.route("Api.EXAMPLE", 443), ("127.0.0.1", 9001))
        self.assertIsNone(r.route("api.example", 80))
        self.assertIsNone(r.route("api.example", None))

    def test_aliases_stay_distinct_past_250_routes(self):
        r = egress.Router({"h%d.example:443" % i: "127.0.0.1:%d" % (10000 + i) for i in range(600)}, None, True)
        self.assertEqual(len(set(r.alias_of.values())), 600)
        for alias in r.aliases:
            self.assertTrue(egress._is_loopback(alias), alias)

    def test_refusal_policy(self):
        r = egress.Router({"api.example:443": "127.0.0.1:9001"}, None, True)
        self.assertFalse(r.refused("api.example", 443))
        self.assertTrue(r.refused("api.example", 80))
        self.assertTrue(r.refused("api.example", None))
        self.assertTrue(r.refused("10.1.2.3", 443))
        for host in ("localhost", "", "127.0.0.1", "127.8.9.1", "::1"):
            self.assertFalse(r.refused(host, 443), host)
        allow = egress.Router({}, None, False)
        self.assertFalse(allow.refused("10.1.2.3", 443))

    def test_helpers(self):
        self.assertEqual(egress._split("[::1]:8080"), ("::1", 8080))
        self.assertEqual(egress._split("host:12"), ("host", 12))
        self.assertIsNone(egress._split("host"))
        self.assertIsNone(egress._split(""))
        self.assertEqual(egress._port(443), 443)
        self.assertEqual(egress._port(b"8080"), 8080)
        self.assertEqual(egress._port("https"), 443)
        self.assertIsNone(egress._port("no-such-service-name"))
        self.assertIsNone(egress._port(None))
        self.assertTrue(egress._is_address("fe80::1%eth0"))
        self.assertFalse(egress._is_address("api.example"))


class Routed(unittest.TestCase):
    def setUp(self):
        self.proxy = Listener()
        self.service = Listener()
        self.addCleanup(self.proxy.close)
        self.addCleanup(self.service.close)
        egress._router = egress.Router({"api.example:443": "127.0.0.1:%d" % self.service.port},
                                       ("127.0.0.1", self.proxy.port), True)
        self.addCleanup(setattr, egress, "_router", None)

    def test_a_declared_name_resolves_to_its_alias_and_connects_to_its_listener(self):
        infos = egress._getaddrinfo("api.example", 443, socket.AF_INET, socket.SOCK_STREAM)
        alias = egress._router.alias_of[("api.example", 443)]
        self.assertEqual({sa for _, _, _, _, sa in infos}, {(alias, self.service.port)})
        with socket.socket() as s:
            s.settimeout(WAIT)
            egress._connect(s, (alias, 443))  # the port the client meant: still the route's listener
            s.sendall(b"hello")
            self.assertTrue(self.service.got.wait(WAIT))
        self.assertEqual(self.service.received, [b"hello"])
        self.assertEqual(self.proxy.received, [])

    def test_a_connect_by_name_is_routed(self):
        with socket.socket() as s:
            s.settimeout(WAIT)
            egress._connect(s, ("api.example", "443"))
            s.sendall(b"by name")
            self.assertTrue(self.service.got.wait(WAIT))
        self.assertEqual(self.service.received, [b"by name"])

    def test_an_undeclared_destination_is_refused_and_reported(self):
        with self.assertRaises(socket.gaierror) as cm:
            egress._getaddrinfo("other.example", 443)
        self.assertIn("other.example is not a declared service (egress refused)", str(cm.exception))
        self.assertTrue(self.proxy.got.wait(WAIT))
        self.assertTrue(self.proxy.received[0].startswith(b"CONNECT other.example:443 HTTP/1.1\r\n"))

        self.proxy.got.clear()
        with socket.socket(socket.AF_INET6) as s:
            with self.assertRaises(ConnectionRefusedError):
                egress._connect(s, ("2001:db8::1", 443))
        self.assertTrue(self.proxy.got.wait(WAIT))
        self.assertTrue(self.proxy.received[1].startswith(b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\n"))

        with socket.socket() as s:
            self.assertEqual(egress._connect_ex(s, ("10.255.255.1", 80)), errno.ECONNREFUSED)

    def test_loopback_and_other_families_pass_through(self):
        with socket.socket(socket.AF_UNIX) as unix:
            self.assertEqual(egress._checked(unix, "/run/x.sock"), "/run/x.sock")
        with socket.socket() as s:
            self.assertEqual(egress._checked(s, ("127.0.0.1", 5)), ("127.0.0.1", 5))
            self.assertEqual(egress._checked(s, ("127.0.0.1",)), ("127.0.0.1",))
        self.assertTrue(egress._getaddrinfo("localhost", 80))
        self.assertTrue(egress.declared("API.example"))
        self.assertFalse(egress.declared("other.example"))
        self.assertFalse(egress.declared(None))

    def test_report_without_a_proxy_or_with_a_dead_one_is_quiet(self):
        egress.Router({}, None, True).report("x.example", 1)
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        port = dead.getsockname()[1]
        dead.close()
        egress.Router({}, ("127.0.0.1", port), True).report("x.example", None)


CHILD = r"""
import contextvars, http.client, json, socket, sys
sys.path.insert(0, sys.argv[1])
from astrabox._harness import egress
call = contextvars.ContextVar("call", default=None)
out = {"before": egress.declared("api.example")}
out["installed"] = egress.install(call, lambda: "unit-7")
out["again"] = egress.install(call)
out["hooked"] = socket.getaddrinfo is egress._getaddrinfo
try:
    socket.create_connection(("other.example", 80), timeout=5)
    out["refused"] = None
except OSError as exc:
    out["refused"] = type(exc).__name__
call.set(12)
conn = http.client.HTTPConnection("api.example", 443, timeout=10)
conn.request("GET", "/v1")
out["status"] = conn.getresponse().status
print(json.dumps(out))
"""


class Install(unittest.TestCase):
    def run_child(self, env):
        full = {k: v for k, v in os.environ.items() if not k.startswith("ASTRABOX_")}
        full.update(env, PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run([sys.executable, "-B", "-c", CHILD, PYTHON_DIR], env=full, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_install_routes_tags_and_refuses(self):
        service, proxy = Listener(), Listener()
        self.addCleanup(service.close)
        self.addCleanup(proxy.close)
        out = self.run_child({egress.ROUTES_ENV: json.dumps({"api.example:443": "127.0.0.1:%d" % service.port}),
                              egress.PROXY_ENV: "127.0.0.1:%d" % proxy.port})
        self.assertEqual(out, {"before": False, "installed": True, "again": True, "hooked": True,
                               "refused": "gaierror", "status": 403})
        self.assertTrue(service.got.wait(WAIT))
        request = service.received[0].decode()
        self.assertTrue(request.startswith("GET /v1 HTTP/1.1\r\n"), request)
        self.assertRegex(request, r"\r\nX-Astrabox-Call: \d+:12\r\n")
        self.assertIn("\r\nX-Astrabox-Work: unit-7\r\n", request)
        self.assertTrue(proxy.got.wait(WAIT))
        self.assertTrue(proxy.received[0].startswith(b"CONNECT other.example:80 "))

    def test_nothing_is_installed_without_routes_and_bad_routes_declare_nothing(self):
        proc = subprocess.run([sys.executable, "-B", "-c",
                               "import sys; sys.path.insert(0, sys.argv[1]); from astrabox._harness import egress; "
                               "print(egress.install())", PYTHON_DIR],
                              env={k: v for k, v in os.environ.items() if not k.startswith("ASTRABOX_")},
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.stdout.strip(), "False", proc.stderr)
        proc = subprocess.run([sys.executable, "-B", "-c",
                               "import sys; sys.path.insert(0, sys.argv[1]); from astrabox._harness import egress; "
                               "print(egress.install(), sorted(egress._router.routes), egress._router.refuse)",
                               PYTHON_DIR],
                              env=dict({k: v for k, v in os.environ.items() if not k.startswith("ASTRABOX_")},
                                       **{egress.ROUTES_ENV: "[not an object]", egress.POLICY_ENV: "allow"}),
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.stdout.strip(), "True [] False", proc.stderr)


if __name__ == "__main__":
    unittest.main()
