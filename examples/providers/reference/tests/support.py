"""Test support: an in-process deployment double, an in-memory sandbox and context builders.

The double follows the kit's ``spec/deployment-double.md`` closely enough for the reference provider's unit
tests: records with ``If-Match`` compare-and-set, fences that refuse writes carrying a fenced
``X-Astrabox-Operation``, fresh credentials, consents per principal, and a log of every request.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

try:
    from astrabox import seams  # noqa: E402  (from PYTHONPATH: the kit's internal/harness/python)
except ImportError as exc:  # pragma: no cover - a setup problem, explained
    raise SystemExit(
        "cannot import astrabox.seams (%s): put the kit's internal/harness/python directory on PYTHONPATH, "
        "or run `astrabox sdk path` and use that" % exc
    )


class Double:
    """A loopback HTTP deployment double. Use as a context manager."""

    def __init__(self) -> None:
        self.records: Dict[str, Tuple[Any, int]] = {}
        self.fenced: set = set()
        self.consents: Dict[str, str] = {"alice": "granted", "bob": "pending"}
        self.requests: List[Dict[str, Any]] = []
        self.issued: List[str] = []
        self.issued_for: Dict[str, Any] = {}
        self.expires_in = 600
        self.hold_credentials = threading.Event()
        self.hold_credentials.set()  # set = not held
        self.credential_arrived = threading.Event()
        self.lock = threading.Lock()
        self.closed = False
        self._counter = itertools.count(1)
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                return json.loads(raw) if raw else None

            def _send(self, status: int, body: Any = None) -> None:
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _handle(self, method: str) -> None:
                body = self._body() if method in ("PUT", "POST") else None
                path = self.path
                entry = {"method": method, "path": path, "headers": dict(self.headers), "body": body, "at": time.time()}
                with double.lock:
                    double.requests.append(entry)
                status, answer = double.answer(method, path, dict(self.headers), body)
                entry["status"] = status
                entry["answered_at"] = time.time()
                self._send(status, answer)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> "Double":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.closed:
            return
        self.closed = True
        self.hold_credentials.set()
        self.server.shutdown()
        self.server.server_close()

    def writes(self, prefix: str = "") -> List[Dict[str, Any]]:
        """Requests that wrote (PUT, POST, DELETE) to a path starting with ``prefix``."""
        return [
            r for r in self.requests if r["method"] in ("PUT", "POST", "DELETE") and r["path"].startswith(prefix)
        ]

    def answer(self, method: str, path: str, headers: Dict[str, str], body: Any) -> Tuple[int, Any]:
        operation = headers.get("X-Astrabox-Operation")
        with self.lock:
            if method in ("PUT", "POST", "DELETE") and operation in self.fenced:
                return 409, {"error": "fenced"}
        if path.startswith("/v1/records/"):
            return self._record(method, unquote(path[len("/v1/records/"):]), headers, body)
        if path == "/v1/fences" and method == "POST":
            with self.lock:
                self.fenced.add(body["operation_id"])
            return 200, {"fenced": body["operation_id"]}
        if path == "/v1/credentials" and method == "POST":
            self.credential_arrived.set()
            self.hold_credentials.wait(10)
            token = "tok-%d-%s" % (next(self._counter), secrets.token_hex(8))
            with self.lock:
                self.issued.append(token)
                self.issued_for[token] = body.get("principal_id")
            return 201, {"token": token, "expires_in": self.expires_in}
        if path.startswith("/v1/consents/"):
            rest = path[len("/v1/consents/"):]
            principal, _, tail = rest.partition("/")
            principal = unquote(principal)
            if (method, tail) in (("GET", ""), ("POST", "check")):
                status = self.consents.get(principal, "pending")
                answer = {"status": status}
                if status != "granted":
                    answer["url"] = "https://identity.example/consent?principal=%s" % principal
                return 200, answer
        if method == "POST" and path == "/v1/dispatch":
            return 202, {}  # forbidden for providers: recorded, answered as the real double does
        if method == "POST" and (path == "/v1/agents" or (path.startswith("/v1/consents/") and path.endswith("/flows"))):
            return 201, {}
        return 404, {"error": "no such endpoint"}

    def _record(self, method: str, key: str, headers: Dict[str, str], body: Any) -> Tuple[int, Any]:
        with self.lock:
            current = self.records.get(key)
            if method == "GET":
                if current is None:
                    return 404, {"error": "not found"}
                return 200, {"value": current[0], "version": current[1]}
            if method == "DELETE":
                self.records.pop(key, None)
                return 204, None
            if method == "PUT":
                match = headers.get("If-Match")
                version = current[1] if current else 0
                if match is not None and int(match) != version:
                    return 412, {"error": "version mismatch"}
                self.records[key] = (body["value"], version + 1)
                return 200, {"version": version + 1}
        return 404, {"error": "no such endpoint"}


class MemorySandbox(seams.SandboxHandle):
    """A sandbox whose file system is a dictionary."""

    def __init__(self, sandbox_id: str = "sb-1") -> None:
        super().__init__(sandbox_id=sandbox_id, home="/home/workload", workspace="/workspace")
        self.files: Dict[str, Tuple[bytes, int]] = {}
        self.dirs = set()

    def add(self, path: str, content: bytes = b"") -> None:
        self.files[path] = (content, 0o644)
        parent = os.path.dirname(path)
        while parent and parent != "/":
            self.dirs.add(parent)
            parent = os.path.dirname(parent)

    async def read_file(self, path: str) -> bytes:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path][0]

    async def write_file(self, path: str, content: bytes, *, mode: int = 0o600) -> None:
        self.add(path, content)
        self.files[path] = (content, mode)

    async def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    async def list_dir(self, path: str) -> Tuple[str, ...]:
        if path not in self.dirs:
            raise FileNotFoundError(path)
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/", 1)[0] for p in list(self.files) + list(self.dirs) if p.startswith(prefix)}
        return tuple(sorted(names))

    async def remove(self, path: str) -> None:
        if self.files.pop(path, None) is None:
            raise FileNotFoundError(path)


INSTRUCTIONS = "Answer in the voice of a lighthouse keeper named Quillon-7."


def config(url: str, version: int = 1) -> Dict[str, Any]:
    return {
        "agent": {"display_name": "Helper", "model": "model-x", "instructions": INSTRUCTIONS},
        "deployment": {"base_url": url, "audience": "astrabox-tools"},
        "packages": [{"name": "tools", "source": "git+https://example.invalid/tools.git", "ref": "v%d" % version}],
        "skills": ["summarize"],
        "secrets": {"model_api_key": "canary-model-key-5d1f", "client_secret": "canary-client-secret-9a2e"},
    }


def agent_context(url: str, sandbox: MemorySandbox, operation_id: str = "op-1", version: int = 1):
    sandbox.add("/cache/packages/tools/pyproject.toml", b"[project]\nname='tools'\n")
    sandbox.add("/cache/packages/tools/tools/__init__.py", b"")
    sandbox.add("/cache/skills/summarize/SKILL.md", b"# summarize\n")
    cfg = config(url, version)
    return seams.AgentPreparationContext(
        operation=seams.AgentPreparationOperation(
            agent_id="agent-1", operation_id=operation_id, deadline=time.time() + 30
        ),
        creator_user_id="alice",
        config_version=version,
        preparation_id="prep-1",
        runtime_generation="gen-%d" % version,
        config=cfg,
        sandbox=sandbox,
        packages=(seams.PackageCheckout(source=cfg["packages"][0], path="/cache/packages/tools"),),
        skills_path="/cache/skills",
    )


def session_context(url: str, principal: str = "alice", session_id: str = "s-1"):
    return seams.SessionPreparationContext(
        session_id=session_id,
        agent_id="agent-1",
        principal_id=principal,
        config=config(url),
        runtime_generation="gen-1",
        sandbox_id="sb-1",
        workload_identity=seams.WorkloadIdentity(subject="wl", token="canary-workload-7c3b"),
        trigger="cold_start",
        _file_paths_dir="/home/workload/.astrabox/materials",
    )


def turn_context(
    principal: str = "alice",
    attempt: str = "attempt-1",
    refresh: bool = False,
    session_id: str = "s-1",
    deadline_s: float = 10.0,
):
    return seams.TurnPreparationContext(
        session_id=session_id,
        agent_id="agent-1",
        principal_id=principal,
        dispatch_attempt_id=attempt,
        runtime_generation="gen-1",
        sandbox_handle=MemorySandbox(),
        deadline=time.time() + deadline_s,
        refresh=refresh,
        _file_paths_dir="/home/workload/.astrabox/materials",
    )


def ua_context(owner: str = "alice"):
    return seams.SessionUserActionContext(session_id="s-1", owner_id=owner, agent_id="agent-1")
