"""A fake of Tailspin's object store: revisioned objects, per-operation fences and access tokens, in memory."""
import json
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
OBJECTS = {}  # key -> {"revision": n, "data": ...}
FENCED = set()
ISSUED = [0]


class Store(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _reply(self, code, doc=None):
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = None
        return doc if isinstance(doc, dict) else None

    def do_GET(self):
        if self.path == "/v2/health":
            return self._reply(200, {"ok": True})
        if not self.path.startswith("/v2/objects/"):
            return self._reply(404, {"error": "no such route"})
        with LOCK:
            obj = OBJECTS.get(self.path[len("/v2/objects/"):])
        if obj is None:
            return self._reply(404, {"error": "no such object"})
        self._reply(200, obj)

    def do_POST(self):
        doc = self._body()
        if self.path == "/__astrabox/reset":
            with LOCK:
                OBJECTS.clear()
                FENCED.clear()
                ISSUED[0] = 0
            return self._reply(204)
        if doc is None:
            return self._reply(400, {"error": "a JSON object is required"})
        if self.path == "/v2/fences":
            with LOCK:
                FENCED.add(str(doc.get("operation")))
            return self._reply(200, {"operation": doc.get("operation")})
        if self.path == "/v2/tokens":
            with LOCK:
                ISSUED[0] += 1
                n = ISSUED[0]
            return self._reply(201, {"token": "tsp_%d_%s" % (n, secrets.token_hex(12)), "ttl": 300})
        if self.path.startswith("/v2/objects/"):
            key = self.path[len("/v2/objects/"):]
            with LOCK:
                if doc.get("operation") and str(doc["operation"]) in FENCED:
                    return self._reply(423, {"error": "operation fenced"})
                current = OBJECTS.get(key, {"revision": 0})["revision"]
                if doc.get("expect_revision") != current:
                    return self._reply(409, {"error": "revision moved", "revision": current})
                OBJECTS[key] = {"revision": current + 1, "data": doc.get("data")}
            return self._reply(201, {"revision": current + 1})
        self._reply(404, {"error": "no such route"})


port = int(sys.argv[sys.argv.index("--port") + 1])
print("tailspin objects fake on 127.0.0.1:%d" % port, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), Store).serve_forever()
