"""A fake of Larkspur's token API: POST /v1/tokens with an Idempotency-Key; a key seen before gets its token.

With LARKSPUR_FAKE_JOURNAL set, every token request is appended to that file as one JSON line (our own tests
read it: which keys minted which tokens for which attempt).
"""
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
ISSUED = {}  # key -> answer


EPOCH = [0]  # resets so far: the journal's lines of one fake between two resets belong to one scenario


def journal(entry):
    path = os.environ.get("LARKSPUR_FAKE_JOURNAL")
    if path:
        entry = dict(entry, fake=os.path.basename(__file__), pid=os.getpid(), epoch=EPOCH[0])
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


class API(BaseHTTPRequestHandler):
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

    def do_GET(self):
        if self.path == "/healthz":
            return self._reply(200, {"ok": True})
        self._reply(404, {"error": "no such route"})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/__astrabox/reset":
            with LOCK:
                ISSUED.clear()
                EPOCH[0] += 1
            return self._reply(204)
        if self.path != "/v1/tokens":
            return self._reply(404, {"error": "no such route"})
        key = self.headers.get("Idempotency-Key")
        if not key:
            return self._reply(400, {"error": "Idempotency-Key is required"})
        try:
            doc = json.loads(raw)
        except ValueError:
            return self._reply(400, {"error": "a JSON object is required"})
        with LOCK:
            answer = ISSUED.get(key)
            replay = answer is not None
            if answer is None:
                answer = {"token": "lk_" + secrets.token_hex(16), "expires_at": round(time.time() + 300, 3)}
                ISSUED[key] = answer
        journal({"key": key, "replay": replay, "metadata": doc.get("metadata")})
        self._reply(200 if replay else 201, answer)


def main():
    port = int(sys.argv[sys.argv.index("--port") + 1])
    ThreadingHTTPServer(("127.0.0.1", port), API).serve_forever()


if __name__ == "__main__":
    main()
