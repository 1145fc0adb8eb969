"""A fake of Fabrikam's consent service for tests.

GET  /v2/consents/<principal>      the principal's consent: GRANTED (the default) or AWAITING_USER
PUT  /__fake/consents/<principal>  {"state": "GRANTED" | "AWAITING_USER"}: what the user did, out of band
GET  /__fake/journal               every consent read and what it answered, in order
POST /__astrabox/reset             forget everything
GET  /healthz                      readiness

With FABRIKAM_CONSENT_JOURNAL set, every read is also appended to that file as a JSON line (tests read it
after the fake is gone).
"""

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

STATES = ("GRANTED", "AWAITING_USER")
lock = threading.Lock()
consents = {}
journal = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, doc=None):
        body = b"" if doc is None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200, {"ok": True})
        if self.path == "/__fake/journal":
            with lock:
                return self.answer(200, {"reads": list(journal)})
        if self.path.startswith("/v2/consents/"):
            principal = unquote(self.path[len("/v2/consents/"):])
            with lock:
                state = consents.get(principal, "GRANTED")
                entry = {"port": self.server.server_port, "seq": len(journal) + 1, "principal": principal, "answered": state}
                journal.append(entry)
                path = os.environ.get("FABRIKAM_CONSENT_JOURNAL")
                if path:
                    with open(path, "a") as f:
                        f.write(json.dumps(entry) + "\n")
            doc = {"principal": principal, "state": state}
            if state != "GRANTED":
                doc["grant_url"] = "https://consent.fabrikam.example/grant"
            return self.answer(200, doc)
        self.answer(404, {"error": "no such resource"})

    def do_PUT(self):
        if not self.path.startswith("/__fake/consents/"):
            return self.answer(404, {"error": "no such resource"})
        principal = unquote(self.path[len("/__fake/consents/"):])
        length = int(self.headers.get("Content-Length") or 0)
        try:
            state = json.loads(self.rfile.read(length)).get("state")
        except ValueError:
            state = None
        if state not in STATES:
            return self.answer(400, {"error": "state must be one of %s" % ", ".join(STATES)})
        with lock:
            consents[principal] = state
        self.answer(204)

    def do_POST(self):
        if self.path == "/__astrabox/reset":
            with lock:
                consents.clear()
                journal.clear()
            return self.answer(204)
        self.answer(404, {"error": "no such resource"})


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
