"""A tiny fake of a records service, as a provider author might write one: counts POSTs, resets on request."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"writes": 0}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("fake: " + (fmt % args) + "\n")

    def _answer(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(200, {"writes": STATE["writes"], "host": self.headers.get("Host")})

    def do_POST(self):
        if self.path == "/__astrabox/reset":
            STATE["writes"] = 0
            return self._answer(200, {})
        STATE["writes"] += 1
        self._answer(201, {"writes": STATE["writes"], "access_token": "at-" + str(STATE["writes"]) * 8})


port = int(sys.argv[sys.argv.index("--port") + 1])
print("fake listening on", port, flush=True)
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
