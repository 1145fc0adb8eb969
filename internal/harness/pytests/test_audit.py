"""audit: which PEP 578 events the harness records, and summaries that never carry a body, a query string or
user information. The arguments are the ones CPython passes for each event (see the audit events table)."""

import os
import pathlib
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness import audit  # noqa: E402

SECRET = "s3cr3t-token"


class Observed(unittest.TestCase):
    def test_which_events(self):
        for event in ("open", "socket.connect", "subprocess.Popen", "shutil.rmtree", "shutil.copyfile", "time.sleep"):
            self.assertTrue(audit.observed(event), event)
        for event in ("exec", "import", "compile", "object.__getattr__", "sys._getframe", "socket.__new__"):
            self.assertFalse(audit.observed(event), event)

    def test_every_observed_event_has_a_summary(self):
        # An event recorded without a summary branch would be silently dropped (summarise returns None).
        args = {"http.client.send": (None, b"GET / HTTP/1.1\r\n"), "os.fork": (),
                "urllib.Request": ("http://h/", None, {}, "GET")}
        for event in sorted(audit.AUDIT_EVENTS):
            with self.subTest(event=event):
                self.assertIsNotNone(audit.summarise(event, args.get(event, ("a", "b", "c", "d"))))

    def test_spawn_events_are_observed_or_known(self):
        for event in ("subprocess.Popen", "os.system", "os.exec", "os.fork", "os.posix_spawn"):
            self.assertIn(event, audit.SPAWN_EVENTS)
            self.assertTrue(audit.observed(event))


class Summaries(unittest.TestCase):
    def test_open(self):
        self.assertEqual(audit.summarise("open", ("/etc/hosts", "r", os.O_RDONLY)), "/etc/hosts r")
        self.assertEqual(audit.summarise("open", ("/x", None, os.O_WRONLY | os.O_CREAT | os.O_APPEND)), "/x wac")
        self.assertEqual(audit.summarise("open", ("/x", None, os.O_RDWR)), "/x rw")
        self.assertEqual(audit.summarise("open", (b"/bytes\xff", None, "bogus")), "/bytes\\xff ?")
        self.assertEqual(audit.summarise("open", (7, None, os.O_RDONLY)), "fd 7 r")  # os.fdopen
        self.assertEqual(audit.summarise("open", (pathlib.PurePosixPath("/p"), "rb", 0)), "/p rb")
        self.assertEqual(audit.summarise("open", ("/short",)), "/short ?")

    def test_sockets(self):
        self.assertEqual(audit.summarise("socket.connect", (None, ("10.0.0.1", 443))), "10.0.0.1:443")
        self.assertEqual(audit.summarise("socket.connect", (None, ("::1", 80, 0, 0))), "::1:80")
        self.assertEqual(audit.summarise("socket.connect", (None, "/run/x.sock")), "/run/x.sock")
        self.assertEqual(audit.summarise("socket.getaddrinfo", ("api.example", "https", 0, 0, 0)), "api.example:https")
        self.assertEqual(audit.summarise("socket.getaddrinfo", (b"api.example", 443, 0, 0, 0)), "api.example:443")
        self.assertEqual(audit.summarise("socket.gethostbyname", ("h",)), "h")
        self.assertEqual(audit.summarise("socket.getnameinfo", (("1.2.3.4", 80), 0)), "1.2.3.4:80")

    def test_urls_lose_user_information_query_and_fragment(self):
        url = "https://user:%s@api.example:8443/v1/items?token=%s#frag" % (SECRET, SECRET)
        got = audit.summarise("urllib.Request", (url, None, {}, None))
        self.assertEqual(got, "GET https://api.example:8443/v1/items")
        got = audit.summarise("urllib.Request", ("http://h", b"body-" + SECRET.encode(), {}, None))
        self.assertEqual(got, "POST http://h/")
        got = audit.summarise("urllib.Request", ("http://h/p", None, {}, "DELETE"))
        self.assertEqual(got, "DELETE http://h/p")
        self.assertEqual(audit.summarise("urllib.Request", ("http://h:notaport/", None, {}, None)),
                         "GET <unparsable url>")

    def test_http_send_records_request_lines_only(self):
        line = ("POST /oauth/token?client_secret=%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n" % (SECRET, SECRET))
        self.assertEqual(audit.summarise("http.client.send", (None, line.encode())), "POST /oauth/token")
        self.assertEqual(audit.summarise("http.client.send", (None, line)), "POST /oauth/token")  # str data
        self.assertEqual(audit.summarise("http.client.send", (None, bytearray(b"GET /a#f HTTP/1.0\r\n"))), "GET /a")
        # A body or a header chunk is never recorded.
        self.assertIsNone(audit.summarise("http.client.send", (None, ("grant_type=x&secret=%s" % SECRET).encode())))
        self.assertIsNone(audit.summarise("http.client.send", (None, iter([b"chunk"]))))
        self.assertIsNone(audit.summarise("http.client.send", (None,)))
        self.assertEqual(audit.summarise("http.client.connect", (None, "api.example", 443)), "api.example:443")

    def test_processes_and_files(self):
        self.assertEqual(audit.summarise("subprocess.Popen", ("/bin/sh", ["/bin/sh", "-c", "true"], None, None)),
                         "/bin/sh -c true")
        self.assertEqual(audit.summarise("subprocess.Popen", ("ls", None, None, None)), "ls")
        self.assertEqual(audit.summarise("os.exec", ("/bin/true", ("true", "x"), {})), "true x")
        self.assertEqual(audit.summarise("os.posix_spawn", ("/bin/true", "true", {})), "true")
        self.assertEqual(len(audit.summarise("os.exec", ("/x", ["a"] * 500, {})).split()), 200)  # bounded
        self.assertEqual(audit.summarise("os.system", (b"echo hi",)), "echo hi")
        self.assertEqual(audit.summarise("os.fork", ()), "")
        self.assertEqual(audit.summarise("os.kill", (12, 9)), "12 9")
        self.assertEqual(audit.summarise("os.rename", ("/a", "/b", None, None)), "/a -> /b")
        self.assertEqual(audit.summarise("os.listdir", (None,)), ".")
        self.assertEqual(audit.summarise("os.scandir", ("/d",)), "/d")
        self.assertEqual(audit.summarise("sqlite3.connect", (":memory:",)), ":memory:")
        self.assertEqual(audit.summarise("time.sleep", (0.25,)), "0.25")
        self.assertEqual(audit.summarise("shutil.copyfile", ("/a", "/b")), "/a /b")
        self.assertIsNone(audit.summarise("not.an.event", ("x",)))

    def test_odd_arguments_never_raise(self):
        class Bad:
            def __str__(self):
                raise RuntimeError

            def __iter__(self):
                raise RuntimeError

        self.assertEqual(audit.summarise("os.remove", (Bad(),)), "<str() raised RuntimeError>")
        self.assertEqual(audit.summarise("os.exec", ("/x", Bad(), {})), "<str() raised RuntimeError>")
        self.assertTrue(audit.summarise("os.system", ("x" * 5000,)).endswith("x... [2952 characters truncated]"))


if __name__ == "__main__":
    unittest.main()
