"""Callback arguments from protocol JSON, and the ``SandboxHandle`` that forwards to Go."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import threading
from typing import Any, Callable, Dict, Tuple

from astrabox import seams
from astrabox._harness.observe import CURRENT_CALL
from astrabox._harness.values import freeze

_ERRORS = {
    "FileNotFoundError": FileNotFoundError,
    "PermissionError": PermissionError,
    "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError,
    "OSError": OSError,
}


class ArgumentError(Exception):
    """The call's arguments do not have the shape protocol.md describes."""


class SandboxBridge:
    """Sends ``sandbox`` requests and resolves them when Go's ``sandbox_reply`` arrives."""

    def __init__(self, send: Callable[[Dict[str, Any]], None]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: Dict[int, Tuple[Any, Any]] = {}

    async def request(self, sandbox_id: str, op: str, path: str, **extra: Any) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            req_id = next(self._ids)
            self._pending[req_id] = (loop, future)
        msg = {"kind": "sandbox", "id": req_id, "call": CURRENT_CALL.get(), "sandbox_id": sandbox_id,
               "op": op, "path": path}
        msg.update(extra)
        try:
            self._send(msg)
            reply = await future
        finally:
            with self._lock:
                self._pending.pop(req_id, None)
        if reply.get("ok"):
            return reply.get("value")
        err = reply.get("error") or {}
        exc_type = _ERRORS.get(err.get("type"), OSError) if isinstance(err, dict) else OSError
        message = err.get("message") if isinstance(err, dict) else None
        raise exc_type(message if isinstance(message, str) else "sandbox %s failed" % op)

    def resolve(self, msg: Dict[str, Any]) -> None:
        """Called from the reader thread with a ``sandbox_reply``."""
        with self._lock:
            entry = self._pending.pop(msg.get("id"), None) if isinstance(msg.get("id"), int) else None
        if entry is None:
            return  # a reply for a request that was cancelled meanwhile
        loop, future = entry

        def settle() -> None:
            if not future.done():
                future.set_result(msg)

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # that loop is closed: nobody waits any more


class SandboxProxy(seams.SandboxHandle):
    """The host's sandbox file interface, answered by Go."""

    def __init__(self, bridge: SandboxBridge, sandbox_id: str, home: str, workspace: str) -> None:
        super().__init__(sandbox_id=sandbox_id, home=home, workspace=workspace)
        self._bridge = bridge

    @staticmethod
    def _path(path: Any) -> str:
        if not isinstance(path, str):
            raise TypeError("sandbox path must be a str, not %s" % type(path).__name__)
        return path

    async def read_file(self, path: str) -> bytes:
        value = await self._bridge.request(self.sandbox_id, "read_file", self._path(path))
        data = value.get("content_b64") if isinstance(value, dict) else None
        return base64.b64decode(data) if isinstance(data, str) else b""

    async def write_file(self, path: str, content: bytes, *, mode: int = 0o600) -> None:
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError("write_file content must be bytes, not %s" % type(content).__name__)
        if not isinstance(mode, int) or isinstance(mode, bool):
            raise TypeError("write_file mode must be an int, not %s" % type(mode).__name__)
        await self._bridge.request(
            self.sandbox_id, "write_file", self._path(path),
            content_b64=base64.b64encode(bytes(content)).decode("ascii"), mode=mode,
        )

    async def exists(self, path: str) -> bool:
        return bool(await self._bridge.request(self.sandbox_id, "exists", self._path(path)))

    async def list_dir(self, path: str) -> Tuple[str, ...]:
        value = await self._bridge.request(self.sandbox_id, "list_dir", self._path(path))
        return tuple(str(v) for v in value) if isinstance(value, list) else ()

    async def remove(self, path: str) -> None:
        await self._bridge.request(self.sandbox_id, "remove", self._path(path))


_NESTED = {
    "operation": seams.AgentPreparationOperation,
    "workload_identity": seams.WorkloadIdentity,
}


def _need(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise ArgumentError("%s must be an object" % where)
    if key not in obj:
        raise ArgumentError("%s lacks the field %r" % (where, key))
    return obj[key]


def _sandbox(bridge: SandboxBridge, obj: Any, where: str) -> SandboxProxy:
    sid = _need(obj, "sandbox_id", where)
    home = obj.get("home", "")
    workspace = obj.get("workspace", "")
    if not all(isinstance(v, str) for v in (sid, home, workspace)):
        raise ArgumentError("%s fields must be strings" % where)
    return SandboxProxy(bridge, sid, home, workspace)


def build(cls: Any, obj: Any, where: str, bridge: SandboxBridge) -> Any:
    """Instantiate the seams dataclass ``cls`` from its JSON form (extra fields are ignored)."""
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "_file_paths_dir":
            value = obj.get("file_paths_dir", "") if isinstance(obj, dict) else ""
            if not isinstance(value, str):
                raise ArgumentError("%s.file_paths_dir must be a string" % where)
            kwargs[f.name] = value
            continue
        value = _need(obj, f.name, where)
        sub = "%s.%s" % (where, f.name)
        if f.name in _NESTED:
            value = build(_NESTED[f.name], value, sub, bridge)
        elif f.name == "packages":
            if not isinstance(value, list):
                raise ArgumentError("%s must be a list" % sub)
            value = tuple(build(seams.PackageCheckout, p, "%s[%d]" % (sub, i), bridge) for i, p in enumerate(value))
        elif f.name in ("config", "source"):
            if not isinstance(value, dict):
                raise ArgumentError("%s must be an object" % sub)
            value = freeze(value)
        elif f.name in ("sandbox", "sandbox_handle"):
            value = _sandbox(bridge, value, sub)
        kwargs[f.name] = value
    return cls(**kwargs)


_CONTEXTS = {
    "synchronize": seams.AgentPreparationContext,
    "prepare_session": seams.SessionPreparationContext,
    "prepare_turn": seams.TurnPreparationContext,
    "read_user_actions": seams.SessionUserActionContext,
    "perform_user_action": seams.SessionUserActionContext,
}


def callback_kwargs(method: str, args: Any, bridge: SandboxBridge) -> Dict[str, Any]:
    """The keyword arguments for ``method`` from the call's ``args``."""
    if not isinstance(args, dict):
        raise ArgumentError("args must be an object")
    if method == "plan":
        config = _need(args, "config", "args")
        if not isinstance(config, dict):
            raise ArgumentError("args.config must be an object")
        return {"config": freeze(config)}
    if method == "recover":
        return {"operation": build(seams.AgentPreparationOperation, _need(args, "operation", "args"), "operation", bridge)}
    cls = _CONTEXTS[method]
    kwargs: Dict[str, Any] = {"context": build(cls, _need(args, "context", "args"), "context", bridge)}
    if method == "perform_user_action":
        action_id = _need(args, "action_id", "args")
        if not isinstance(action_id, str):
            raise ArgumentError("args.action_id must be a string")
        kwargs["action_id"] = action_id
    return kwargs
