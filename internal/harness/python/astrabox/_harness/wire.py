"""Length-prefixed JSON frames on descriptors 3 (requests in) and 4 (replies out)."""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
from typing import Any, Callable, Dict, Optional

MAX_FRAME = 64 * 1024 * 1024
IN_FD = 3
OUT_FD = 4


class FrameTooLarge(Exception):
    """An outgoing message would exceed :data:`MAX_FRAME`."""


def die(message: str, status: int) -> None:
    """Say why on descriptor 2 and end the process at once (no cleanup that could hang)."""
    try:
        os.write(2, ("astrabox harness: %s\n" % message).encode("utf-8", "replace"))
    except OSError:
        pass
    os._exit(status)


def encode_frame(msg: Dict[str, Any]) -> bytes:
    """Serialise one message. ASCII JSON, so lone surrogates from provider strings stay encodable."""
    body = json.dumps(msg, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    if len(body) > MAX_FRAME:
        raise FrameTooLarge("message is %d bytes, above the %d-byte frame limit" % (len(body), MAX_FRAME))
    return struct.pack(">I", len(body)) + body


class Writer:
    """Serialised writes to the reply descriptor, from any thread."""

    def __init__(self, fd: int = OUT_FD) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.closed = False

    def send(self, msg: Dict[str, Any]) -> None:
        data = encode_frame(msg)
        with self._lock:
            if self.closed:
                return
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self._fd, view)
                except InterruptedError:
                    continue
                except OSError as exc:
                    die("the reply channel is gone (%s); exiting" % exc.strerror, 3)
                    return
                view = view[n:]

    def close(self) -> None:
        with self._lock:
            self.closed = True


def _read_exact(fd: int, n: int) -> Optional[bytes]:
    chunks = []
    while n > 0:
        try:
            chunk = os.read(fd, min(n, 1 << 20))
        except InterruptedError:
            continue
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frames(deliver: Callable[[Dict[str, Any]], None], fd: int = IN_FD) -> None:
    """Read frames until end of file and pass each decoded message to ``deliver``.

    A length above :data:`MAX_FRAME`, bad JSON or a non-object ends the process: the stream cannot be
    trusted any more. End of file (Go went away) also ends the process.
    """
    while True:
        try:
            head = _read_exact(fd, 4)
        except OSError as exc:
            die("reading requests failed (%s)" % exc.strerror, 3)
            return
        if head is None:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:  # noqa: B036
                pass
            os._exit(0)
        (length,) = struct.unpack(">I", head)
        if length > MAX_FRAME:
            die("harness protocol corrupted: frame of %d bytes exceeds the limit" % length, 2)
        try:
            body = _read_exact(fd, length)
        except OSError as exc:
            die("reading requests failed (%s)" % exc.strerror, 3)
            return
        if body is None:
            die("harness protocol corrupted: request stream ended inside a frame", 2)
            return
        try:
            msg = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            die("harness protocol corrupted: a request is not UTF-8 JSON", 2)
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("kind"), str):
            die("harness protocol corrupted: a request is not an object with a kind", 2)
        deliver(msg)
