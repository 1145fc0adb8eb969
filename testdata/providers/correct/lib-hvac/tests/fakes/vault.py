"""Lakeshore's Vault fake: KV v2 (mount ``kv``) with check-and-set, and token creation.

Enough of Vault for the provider's integration tests and for astrabox runs:

- ``GET /v1/kv/data/<path>``: the newest version, or 404 ``{"errors": []}``;
- ``POST /v1/kv/data/<path>`` ``{"options": {"cas": N}, "data": {...}}``: applied when the secret is at
  version N (0: must not exist), else 400 "check-and-set parameter did not match the current version";
  without ``options.cas`` it is applied unconditionally (the mount does not require cas);
- ``POST /v1/auth/token/create``: a new child token (``hvs.`` + 24 random characters) per call;
- ``GET /v1/sys/health``; ``POST /__astrabox/reset`` forgets every secret.

Tokens are not checked. Every request is recorded: ``GET /__fake/requests`` answers the record of this
process as JSON, and when ``FAKE_RECORD_DIR`` is set each entry is also appended to
``$FAKE_RECORD_DIR/vault-<pid>.jsonl`` (a reset is recorded as ``{"event": "reset"}``).
"""
import datetime
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

KV = "/v1/kv/data/"
LOCK = threading.Lock()
STORE = {}  # path -> [ (data, created_time) ]
RECORD = []
RECORD_FILE = None
if os.environ.get("FAKE_RECORD_DIR"):
    RECORD_FILE = os.path.join(os.environ["FAKE_RECORD_DIR"], "vault-%d.jsonl" % os.getpid())


def record(entry):
    with LOCK:
        RECORD.append(entry)
        if RECORD_FILE:
            with open(RECORD_FILE, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


class Vault(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, code, doc=None):
        body = json.dumps(doc).encode() if doc is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return code

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return None

    def _handle(self, method):
        path = urlsplit(self.path).path
        body = self._body() if method in ("POST", "PUT") else None
        if path == "/__fake/requests":
            with LOCK:
                doc = list(RECORD)
            return self._send(200, doc)
        if path == "/__astrabox/reset":
            with LOCK:
                STORE.clear()
            record({"event": "reset", "t": time.time()})
            return self._send(204)
        status = self._route(method, path, body)
        if path != "/v1/sys/health":
            record({"t": time.time(), "method": method, "path": path, "status": status,
                    "host": self.headers.get("Host", ""), "body": body})

    def _route(self, method, path, body):
        if path == "/v1/sys/health":
            return self._send(200, {"initialized": True, "sealed": False, "standby": False})
        if path == "/v1/auth/token/create" and method in ("POST", "PUT"):
            meta = (body or {}).get("meta") or {}
            token = "hvs." + secrets.token_urlsafe(18)
            return self._send(200, {"auth": {"client_token": token, "accessor": secrets.token_hex(8),
                                             "policies": (body or {}).get("policies") or ["default"],
                                             "metadata": meta, "lease_duration": 300, "renewable": True}})
        if not path.startswith(KV):
            return self._send(404, {"errors": ["no handler for route '%s'" % path]})
        key = unquote(path[len(KV):])
        if method == "GET":
            with LOCK:
                versions = STORE.get(key)
                if not versions:
                    return self._send(404, {"errors": []})
                data, created = versions[-1]
                n = len(versions)
            return self._send(200, {"data": {"data": data, "metadata": {
                "version": n, "created_time": created, "deletion_time": "", "destroyed": False}}})
        if method in ("POST", "PUT"):
            if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
                return self._send(400, {"errors": ["no data provided"]})
            cas = (body.get("options") or {}).get("cas")
            created = datetime.datetime.now(datetime.timezone.utc).isoformat()
            with LOCK:
                versions = STORE.setdefault(key, [])
                if cas is not None and int(cas) != len(versions):
                    if not versions:
                        del STORE[key]
                    return self._send(400, {"errors": ["check-and-set parameter did not match the current version"]})
                versions.append((body["data"], created))
                n = len(versions)
            return self._send(200, {"data": {"version": n, "created_time": created, "deletion_time": "", "destroyed": False}})
        return self._send(405, {"errors": ["unsupported operation"]})

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")


port = int(sys.argv[sys.argv.index("--port") + 1])
server = ThreadingHTTPServer(("127.0.0.1", port), Vault)
server.daemon_threads = True
print("lakeshore vault fake on 127.0.0.1:%d" % port, flush=True)
server.serve_forever()
