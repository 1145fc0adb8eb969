"""A fake of the AWS Secrets Manager JSON API (the operations Larkspur's provider calls), in memory.

With LARKSPUR_FAKE_JOURNAL set, every write is appended to that file as one JSON line.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SECRETS = {}  # name -> {"value": str, "version": token}


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

    def _reply(self, code, doc):
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code, kind, message):
        self._reply(code, {"__type": kind, "message": message})

    def do_GET(self):
        if self.path == "/healthz":
            return self._reply(200, {"ok": True})
        self._error(404, "NotFound", "no such route")

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/__astrabox/reset":
            with LOCK:
                SECRETS.clear()
                EPOCH[0] += 1
            return self._reply(200, {})
        target = self.headers.get("X-Amz-Target", "")
        op = target.rpartition(".")[2]
        try:
            doc = json.loads(raw or b"{}")
        except ValueError:
            return self._error(400, "SerializationException", "bad JSON")
        name = doc.get("SecretId") or doc.get("Name")
        token = doc.get("ClientRequestToken", "")
        with LOCK:
            current = SECRETS.get(name)
            if op in ("GetSecretValue", "DescribeSecret"):
                if current is None:
                    return self._error(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
                return self._reply(200, {"Name": name, "SecretString": current["value"], "VersionId": current["version"]})
            if op == "CreateSecret":
                if current is not None:
                    return self._error(400, "ResourceExistsException", "the secret already exists")
                SECRETS[name] = {"value": doc.get("SecretString", ""), "version": token}
            elif op == "PutSecretValue":
                if current is None:
                    return self._error(400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
                if token and token == current["version"]:
                    return self._reply(200, {"Name": name, "VersionId": token})  # a retry of the same write
                SECRETS[name] = {"value": doc.get("SecretString", ""), "version": token}
            else:
                return self._error(400, "InvalidAction", "not supported by this fake: " + op)
        journal({"op": op, "name": name, "token": token, "operation": self.headers.get("X-Larkspur-Operation")})
        self._reply(200, {"Name": name, "VersionId": token})


def main():
    port = int(sys.argv[sys.argv.index("--port") + 1])
    ThreadingHTTPServer(("127.0.0.1", port), API).serve_forever()


if __name__ == "__main__":
    main()
