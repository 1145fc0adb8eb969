"""A recording ledger: answers every write with the stored document and keeps every request it saw.

GET /__ledger/requests returns them (method, path, headers) so that a test can read what really arrived.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEEN = []
LOCK = threading.Lock()


class Ledger(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self, code, doc, extra=()):
        # S3 (path-style, /<bucket>/<key>) answers object writes and reads with headers only
        body = b"" if self.path.startswith("/pooled-ledger/") else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _record(self):
        body = self._body() if self.command in ("PUT", "POST", "PATCH") else b""
        if not self.path.startswith("/__ledger") and self.path != "/healthz":
            with LOCK:
                SEEN.append({"method": self.command, "path": self.path, "size": len(body)})
        return body

    def do_GET(self):
        self._record()
        if self.path == "/__ledger/requests":
            with LOCK:
                return self._answer(200, list(SEEN))
        self._answer(200, {"path": self.path, "state": "granted"})

    def do_PUT(self):
        body = self._record()
        self._answer(200, {"path": self.path, "stored": len(body)}, [("ETag", '"d41d8cd98f00b204e9800998ecf8427e"')])

    do_POST = do_PUT

    def do_HEAD(self):
        self._record()
        self._answer(200, {}, [("ETag", '"d41d8cd98f00b204e9800998ecf8427e"')])


port = int(sys.argv[sys.argv.index("--port") + 1])
ThreadingHTTPServer(("127.0.0.1", port), Ledger).serve_forever()
