"""Ridgeline's entitlements service, faked (https://entitlements.ridgeline.example).

  GET  /v2/entitlements/{principal}          {"state": "active"|"pending", "enroll_url": ...}
  POST /v2/entitlements/{principal}:refresh  the same, re-evaluated (changes nothing)
  POST /v2/tokens                            {"subject", "session", "attempt"} -> a new token
  GET  /v2/attempts/{session}/{attempt}      the attempt's token record, 200 / 404
  PUT  /v2/attempts/{session}/{attempt}      store it; If-None-Match: * = create only (412 when present);
                                             If-Match: <etag> = replace that version only (412 otherwise)
  POST /v2/events                            an audit event
  PUT  /v2/markers/{name...}                 store a marker document (idempotent: the same body twice is one)
Principals given with --pending are pending after every reset; POST /__fake/entitlements/{principal} with
{"state": "active"|"pending"} changes one (a control request for a suite that drives the service's
prerequisites, issue 26 item 6). Every request is recorded:
GET /__fake/requests, and $FAKE_RECORD_DIR/entitlements-<pid>.jsonl when set.
"""
import json, os, secrets, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEEDED = {sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--pending"}
PENDING = set(SEEDED)
mu = threading.Lock()
attempts, events, log = {}, [], []
sink = os.path.join(os.environ["FAKE_RECORD_DIR"], "entitlements-%d.jsonl" % os.getpid()) if os.environ.get("FAKE_RECORD_DIR") else None


def remember(entry):
    with mu:
        log.append(entry)
        if sink:
            with open(sink, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, doc=None, etag=None):
        data = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if etag:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return code

    def any(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        path = self.path.split("?")[0]
        if path == "/__fake/requests":
            return self.send(200, log)
        if path == "/__astrabox/reset":
            with mu:
                attempts.clear()
                events.clear()
                PENDING.clear()
                PENDING.update(SEEDED)
            remember({"event": "reset", "t": time.time()})
            return self.send(204)
        if path == "/healthz":
            return self.send(200, {"ok": True})
        if path.startswith("/__fake/entitlements/") and self.command == "POST":
            who = path.rsplit("/", 1)[-1]
            with mu:
                (PENDING.add if body.get("state") == "pending" else PENDING.discard)(who)
            remember({"t": time.time(), "control": True, "principal": who, "consent": body.get("state")})
            return self.send(200, {"principal": who, "state": body.get("state")})
        code = self.route(path, body)
        entry = {"t": time.time(), "method": self.command, "path": path, "status": code, "body": body}
        if path.startswith("/v2/entitlements/"):
            who = path.split("/")[3].split(":")[0]
            entry.update(principal=who, consent="pending" if who in PENDING else "active")
        remember(entry)

    def route(self, path, body):
        p = path.strip("/").split("/")
        if p[:2] == ["v2", "entitlements"] and len(p) == 3:
            who = p[2].split(":")[0]
            with mu:
                state = "pending" if who in PENDING else "active"
            return self.send(200, {"principal": who, "state": state, "enroll_url": "https://ridgeline.example/enroll/" + who})
        if path == "/v2/tokens" and self.command == "POST":
            return self.send(201, {"token": "rdg_" + secrets.token_urlsafe(20), "ttl": 600})
        if path == "/v2/events" and self.command == "POST":
            with mu:
                events.append(body)
            return self.send(202, {"ok": True})
        if p[:2] == ["v2", "markers"] and len(p) > 2 and self.command == "PUT":
            with mu:
                events.append({"marker": path, "body": body})
            return self.send(200, {"stored": True})
        if p[:2] == ["v2", "attempts"] and len(p) == 4:
            key = (p[2], p[3])
            with mu:
                cur = attempts.get(key)
                if self.command == "GET":
                    return self.send(200, cur[1], etag=cur[0]) if cur else self.send(404, {"error": "not found"})
                if self.command == "PUT":
                    if self.headers.get("If-None-Match") == "*" and cur:
                        return self.send(412, {"error": "exists"})
                    if self.headers.get("If-Match") and (not cur or cur[0] != self.headers["If-Match"]):
                        return self.send(412, {"error": "changed"})
                    etag = '"%s"' % secrets.token_hex(4)
                    attempts[key] = (etag, body)
                    return self.send(201, {"stored": True}, etag=etag)
        return self.send(404, {"error": "no route"})

    do_GET = do_POST = do_PUT = any


port = int(sys.argv[sys.argv.index("--port") + 1])
s = ThreadingHTTPServer(("127.0.0.1", port), H)
s.daemon_threads = True
print("ridgeline entitlements fake on %d" % port, flush=True)
s.serve_forever()
