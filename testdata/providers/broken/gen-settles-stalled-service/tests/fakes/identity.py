"""A fake of Northwind's identity service during the incident: it answers health checks and resets, but its token
endpoint never answers (the upstream directory it consults hangs)."""
import itertools
import json
import secrets
import time
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

ISSUED = []
COUNTER = itertools.count(1)


class Identity(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def _send(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200 if self.path == "/healthz" else 404, {"issued": len(ISSUED)})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        if self.path == "/__astrabox/reset":
            ISSUED.clear()
            return self._send(200, {})
        if self.path != "/oauth2/v2.0/token" or form.get("grant_type") != ["client_credentials"]:
            return self._send(400, {"error": "unsupported_grant_type"})
        time.sleep(3600)  # the token endpoint stalls
        token = "nw_at_%d_%s" % (next(COUNTER), secrets.token_hex(12))
        ISSUED.append(token)
        self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})


port = int(sys.argv[sys.argv.index("--port") + 1])
ThreadingHTTPServer(("127.0.0.1", port), Identity).serve_forever()
