"""A ledger fake in the style of a quick test double: appends every POSTed entry, lists them on GET."""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ENTRIES = []


class Ledger(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def _reply(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._reply(200, {"entries": ENTRIES})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if self.path == "/__astrabox/reset":
            del ENTRIES[:]
            return self._reply(200, {})
        ENTRIES.append(body)
        self._reply(201, {"count": len(ENTRIES)})


port = int(sys.argv[sys.argv.index("--port") + 1])
print("ledger listening on %d as pid %d" % (port, os.getpid()), flush=True)
HTTPServer(("127.0.0.1", port), Ledger).serve_forever()
