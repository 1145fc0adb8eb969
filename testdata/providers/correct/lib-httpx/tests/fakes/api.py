"""Fake of Brightwave's credential API (https://api.brightwave.example), standard library only.

Routes (JSON):
  PUT  /v1/sessions/{sid}                         store the Session binding (idempotent by nature)
  GET  /v1/sessions/{sid}                         200 / 404
  GET  /v1/sessions/{sid}/attempts/{aid}/credential   the attempt's current credential, 200 / 404
  POST /v1/sessions/{sid}/attempts/{aid}/credential   issue (or rotate) it; needs Idempotency-Key: a key seen
                                                  before replays the first answer and issues nothing
  PUT  /v1/sessions/{sid}/attempts/{aid}/started  mark the attempt started (the same body twice is one)
  POST /v1/session-credentials                    a Session credential (Idempotency-Key honoured too)
  POST /v1/audit-events                           an audit event (Idempotency-Key honoured)
  GET  /healthz
Every request is kept in the record: GET /__fake/requests, and $FAKE_RECORD_DIR/api-<pid>.jsonl when set.
"""
import json, os, secrets, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
state = {"sessions": {}, "current": {}, "replies": {}, "audit": []}
record = []
record_path = os.path.join(os.environ["FAKE_RECORD_DIR"], "api-%d.jsonl" % os.getpid()) if os.environ.get("FAKE_RECORD_DIR") else None


def note(entry):
    with lock:
        record.append(entry)
        if record_path:
            with open(record_path, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


def credential(ttl=300):
    return {"id": "cred_" + secrets.token_hex(6), "secret": "bw_live_" + secrets.token_urlsafe(24),
            "expires_at": round(time.time() + ttl, 3)}


class Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, doc=None):
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return code

    def serve(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?")[0]
        if path == "/__fake/requests":
            with lock:
                return self.reply(200, list(record))
        if path == "/__astrabox/reset":
            with lock:
                for v in state.values():
                    v.clear()
            note({"event": "reset", "t": time.time()})
            return self.reply(204)
        key = self.headers.get("Idempotency-Key")
        status = self.route(self.command, path, body, key)
        if path != "/healthz":
            note({"t": time.time(), "method": self.command, "path": path, "status": status, "idempotency_key": key,
                  "body": body})

    def route(self, method, path, body, key):
        parts = path.strip("/").split("/")
        if path == "/healthz":
            return self.reply(200, {"ok": True})
        if method in ("POST",) and not key:
            return self.reply(400, {"error": "Idempotency-Key header required"})
        if method == "POST" and key:
            with lock:
                seen = state["replies"].get((path, key))
            if seen:
                return self.reply(seen[0], seen[1])
        if parts[:2] == ["v1", "sessions"] and len(parts) == 3:
            with lock:
                if method == "PUT":
                    state["sessions"][parts[2]] = body
                    return self.reply(200, body)
                if parts[2] in state["sessions"]:
                    return self.reply(200, state["sessions"][parts[2]])
            return self.reply(404, {"error": "no such session"})
        if parts[:2] == ["v1", "sessions"] and len(parts) == 6 and parts[3] == "attempts" and parts[5] == "credential":
            attempt = (parts[2], parts[4])
            with lock:
                if method == "GET":
                    cur = state["current"].get(attempt)
                    return self.reply(200, cur) if cur else self.reply(404, {"error": "no credential"})
                cred = credential()
                state["current"][attempt] = cred
                state["replies"][(path, key)] = (201, cred)
            return self.reply(201, cred)
        if parts[:2] == ["v1", "sessions"] and len(parts) == 6 and parts[5] == "started" and method == "PUT":
            with lock:
                state["audit"].append({"started": path})
            return self.reply(200, {"started": True})
        if path == "/v1/session-credentials" and method == "POST":
            cred = credential(900)
            with lock:
                state["replies"][(path, key)] = (201, cred)
            return self.reply(201, cred)
        if path == "/v1/audit-events" and method == "POST":
            with lock:
                state["audit"].append(body)
                state["replies"][(path, key)] = (202, {"accepted": True})
            return self.reply(202, {"accepted": True})
        return self.reply(404, {"error": "no route"})

    do_GET = do_POST = do_PUT = serve


port = int(sys.argv[sys.argv.index("--port") + 1])
srv = ThreadingHTTPServer(("127.0.0.1", port), Api)
srv.daemon_threads = True
print("brightwave api fake on %d" % port, flush=True)
srv.serve_forever()
