"""Fake of Quillfeather's identity platform (https://login.quillfeather.example).

  POST /oauth2/token   grant_type=client_credentials (HTTP Basic client auth) -> a service token;
                       grant_type=urn:ietf:params:oauth:grant-type:token-exchange -> a user token for
                       requested_subject (needs a service token as subject_token)
  GET  /v1/users/{principal}/consent         {"status": "granted"|"pending", "url": ...}
  POST /v1/users/{principal}/consent/check   the same (a re-check changes nothing)
  GET  /v1/grants/{session}/{attempt}        the attempt's stored grant, 200 / 404
  PUT  /v1/grants/{session}/{attempt}        store it; If-None-Match: * means create only (412 if present)
  POST /__fake/consent/{principal}           control: body {"status": ...} sets that principal's consent

Principals named with --pending start pending (and stay so after a reset); everybody else is granted.
Every request is recorded (GET /__fake/requests; $FAKE_RECORD_DIR/login-<pid>.jsonl when set).
"""
import json, os, secrets, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

LOCK = threading.Lock()
PENDING = [a for i, a in enumerate(sys.argv) if i > 0 and sys.argv[i - 1] == "--pending"]
DB = {"service": set(), "grants": {}, "consent": {}}
LOG = []
LOG_FILE = os.path.join(os.environ["FAKE_RECORD_DIR"], "login-%d.jsonl" % os.getpid()) if os.environ.get("FAKE_RECORD_DIR") else None


def reset():
    DB["service"].clear()
    DB["grants"].clear()
    DB["consent"] = {p: "pending" for p in PENDING}


def note(entry):
    with LOCK:
        LOG.append(entry)
        if LOG_FILE:
            with open(LOG_FILE, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


reset()


class Login(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def out(self, code, doc=None):
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return code

    def handle_any(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        if path == "/__fake/requests":
            return self.out(200, LOG)
        if path == "/__astrabox/reset":
            with LOCK:
                reset()
            note({"event": "reset", "t": time.time()})
            return self.out(204)
        status, fields = self.route(path, raw)
        if path != "/.well-known/openid-configuration":
            note({"t": time.time(), "method": self.command, "path": path, "status": status, **fields})

    def route(self, path, raw):
        m, parts = self.command, path.strip("/").split("/")
        if path == "/.well-known/openid-configuration":
            return self.out(200, {"issuer": "https://login.quillfeather.example",
                                  "token_endpoint": "https://login.quillfeather.example/oauth2/token"}), {}
        if path.startswith("/__fake/consent/") and m == "POST":
            with LOCK:
                DB["consent"][parts[-1]] = json.loads(raw)["status"]
            return self.out(200, {"status": DB["consent"][parts[-1]]}), {"control": True, "principal": parts[-1],
                                                                        "consent": DB["consent"][parts[-1]]}
        if path == "/oauth2/token" and m == "POST":
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            grant = form.get("grant_type")
            if grant == "client_credentials":
                tok = "qf_svc_" + secrets.token_urlsafe(18)
                with LOCK:
                    DB["service"].add(tok)
                return self.out(200, {"access_token": tok, "token_type": "Bearer", "expires_in": 3600}), {"grant_type": grant}
            if grant == "urn:ietf:params:oauth:grant-type:token-exchange":
                with LOCK:
                    ok = form.get("subject_token") in DB["service"]
                if not ok:
                    return self.out(401, {"error": "invalid_grant"}), {"grant_type": grant}
                tok = "qf_usr_" + secrets.token_urlsafe(18)
                return self.out(200, {"access_token": tok, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                                      "token_type": "Bearer", "expires_in": 600}), {"grant_type": grant, "subject": form.get("requested_subject")}
            return self.out(400, {"error": "unsupported_grant_type"}), {"grant_type": grant}
        if parts[:2] == ["v1", "users"] and len(parts) >= 4 and parts[3] == "consent":
            with LOCK:
                status = DB["consent"].get(parts[2], "granted")
            return self.out(200, {"status": status, "url": "https://login.quillfeather.example/consent/" + parts[2]}), {"principal": parts[2], "consent": status}
        if parts[:2] == ["v1", "grants"] and len(parts) == 4:
            key = (parts[2], parts[3])
            with LOCK:
                if m == "GET":
                    g = DB["grants"].get(key)
                    return (self.out(200, g) if g else self.out(404, {"error": "not found"})), {}
                if m == "PUT":
                    if self.headers.get("If-None-Match") == "*" and key in DB["grants"]:
                        return self.out(412, {"error": "exists"}), {}
                    DB["grants"][key] = json.loads(raw)
                    return self.out(201, {"stored": True}), {"principal": DB["grants"][key].get("principal")}
        return self.out(404, {"error": "no route"}), {}

    do_GET = do_POST = do_PUT = handle_any


port = int(sys.argv[sys.argv.index("--port") + 1])
srv = ThreadingHTTPServer(("127.0.0.1", port), Login)
srv.daemon_threads = True
print("quillfeather login fake on %d (pending: %s)" % (port, PENDING), flush=True)
srv.serve_forever()
