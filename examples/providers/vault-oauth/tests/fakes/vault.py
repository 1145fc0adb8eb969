"""A fake of Vault's KV version 2 engine at ``/v1/secret/data/<path>``, for tests and astrabox runs.

- ``GET``: 200 ``{"data": {"data": ..., "metadata": {"version": N, "created_time": ...}}}`` or 404.
- ``POST``/``PUT`` ``{"options": {"cas": N}, "data": {...}}``: applied only when the secret is at version N
  (0: does not exist yet), else 400 "check-and-set parameter did not match the current version".
- Fences: a write whose ``X-Fabrikam-Operation`` header names an operation that has a secret under
  ``fences/<operation>`` is refused with 403, as a Vault policy would after the operation was revoked.
- ``GET /v1/sys/health``: 200. ``POST /__astrabox/reset``: forget everything.
"""
import datetime
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

PREFIX = "/v1/secret/data/"
LOCK = threading.Lock()
STORE = {}  # path -> list of (data, created_time); version = index + 1


class Vault(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, code, doc=None):
        body = json.dumps(doc).encode() if doc is not None else b""
        self.send_response(code)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def _path(self):
        path = urlsplit(self.path).path
        return unquote(path[len(PREFIX):]) if path.startswith(PREFIX) else None

    def do_GET(self):
        if urlsplit(self.path).path == "/v1/sys/health":
            return self._send(200, {"initialized": True, "sealed": False})
        key = self._path()
        with LOCK:
            versions = STORE.get(key) if key else None
            if not versions:
                return self._send(404, {"errors": []})
            data, created = versions[-1]
            meta = {"version": len(versions), "created_time": created, "deletion_time": "", "destroyed": False}
        self._send(200, {"data": {"data": data, "metadata": meta}})

    def do_POST(self):
        if urlsplit(self.path).path == "/__astrabox/reset":
            self._body()
            with LOCK:
                STORE.clear()
            return self._send(204)
        key = self._path()
        body = self._body()
        if key is None:
            return self._send(404, {"errors": []})
        if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
            return self._send(400, {"errors": ["no data provided"]})
        operation = self.headers.get("X-Fabrikam-Operation", "")
        cas = (body.get("options") or {}).get("cas")
        with LOCK:
            if operation and STORE.get("fences/" + operation):
                return self._send(403, {"errors": ["permission denied"]})
            versions = STORE.setdefault(key, [])
            if cas is not None and cas != len(versions):
                return self._send(400, {"errors": ["check-and-set parameter did not match the current version"]})
            created = datetime.datetime.now(datetime.timezone.utc).isoformat()
            versions.append((body["data"], created))
            meta = {"version": len(versions), "created_time": created, "deletion_time": "", "destroyed": False}
        self._send(200, {"data": meta})

    do_PUT = do_POST


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # bursts from several replicas at once


port = int(sys.argv[sys.argv.index("--port") + 1])
Server(("127.0.0.1", port), Vault).serve_forever()
