"""A fake of a flaky upstream, as an author reproducing a production incident would write one: each path
misbehaves one way. /token stalls (the upstream hangs), /close drops the connection without an answer,
/drip answers one byte a second, /flood answers a body of ?mb= megabytes (1024 by default). With --pidfile it
writes its own pid, so that a test can see whether it outlived the kit."""
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Troubled(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("troubled: " + (fmt % args) + "\n")

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/token":
            time.sleep(3600)
        elif url.path == "/close":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif url.path == "/drip":
            self.send_response(200)
            self.send_header("Content-Length", "3600")
            self.end_headers()
            for _ in range(3600):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(1)
        elif url.path == "/flood":
            mb = int(parse_qs(url.query).get("mb", ["1024"])[0])
            self.send_response(200)
            self.send_header("Content-Length", str(mb << 20))
            self.end_headers()
            chunk = b"\0" * (1 << 20)
            for _ in range(mb):
                self.wfile.write(chunk)
        else:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    do_POST = do_GET


args = sys.argv
if "--pidfile" in args:
    with open(args[args.index("--pidfile") + 1], "w") as f:
        f.write(str(__import__("os").getpid()))
ThreadingHTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Troubled).serve_forever()
