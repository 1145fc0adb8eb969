"""A fake of Fabrikam's login service: OAuth2 client credentials at ``POST /oauth2/token``.

Every request gets a new opaque access token (``expires_in`` 3600). ``POST /__astrabox/reset`` forgets the
count of issued tokens.
"""
import itertools
import json
import secrets
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

COUNTER = itertools.count(1)


class Login(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/.well-known/openid-configuration":
            return self._send(200, {"issuer": "https://login.fabrikam.example", "token_endpoint": "https://login.fabrikam.example/oauth2/token"})
        self._send(404, {"error": "not_found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        if self.path == "/__astrabox/reset":
            return self._send(200, {})
        if self.path != "/oauth2/token":
            return self._send(404, {"error": "not_found"})
        if form.get("grant_type") != ["client_credentials"] or not form.get("client_id"):
            return self._send(400, {"error": "unsupported_grant_type"})
        token = "fbk_at_%d_%s" % (next(COUNTER), secrets.token_hex(16))
        self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": form.get("scope", [""])[0]})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # bursts from several replicas at once


port = int(sys.argv[sys.argv.index("--port") + 1])
Server(("127.0.0.1", port), Login).serve_forever()
