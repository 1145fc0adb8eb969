"""Length-prefixed JSON frames on descriptors 3 (requests in) and 4 (replies out)."""

from __future__ import annotations

import json
import json.encoder
import os
import select
import struct
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

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


#: The frames' JSON encoder, made once: ``json.dumps`` with any non-default option builds a new
#: ``JSONEncoder`` (and its C encoder) for every message, which cost a reply more than its small body did.
_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
try:  # its signature is CPython's business: if it ever changes, use the pure path
    if _C_MAKE_ENCODER is not None and "".join(_C_MAKE_ENCODER(
            {}, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)(
            {"a": [1.5]}, 0)) != '{"a":[1.5]}':
        _C_MAKE_ENCODER = None
except Exception:  # noqa: BLE001
    _C_MAKE_ENCODER = None


def _dumps(msg: Dict[str, Any]) -> str:
    """``json.dumps(msg, ensure_ascii=True, allow_nan=False, separators=(",", ":"))``, without building an
    encoder per message. The C encoder is made per message (cheap) so that its cycle markers start empty."""
    if _C_MAKE_ENCODER is None:
        return _ENCODER.encode(msg)
    enc = _C_MAKE_ENCODER({}, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",",
                          False, False, False)
    return "".join(enc(msg, 0))


class Verbatim(str):
    """JSON text already encoded (exactly as :func:`_dumps` would encode its value), placed as it is when it is a
    value of a message's top level (:func:`encode_frame`). The reply's empty observations are one
    (:data:`EMPTY_OBSERVATIONS`)."""

    __slots__ = ()


#: The observations of a call that logged, warned, audited, connected and left nothing: most replies carry them.
#: The same text as ``_dumps(Observations().wire())`` (test_wire.py checks it).
EMPTY_OBSERVATIONS = Verbatim('{"logs":[],"warnings":[],"audit":[],"dropped":0,'
                              '"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}}')

_encode_str = json.encoder.encode_basestring_ascii
#: The encoded keys of the harness's own messages, as ``_dumps`` spells them (filled as keys are seen).
_KEYS: Dict[str, str] = {}


def _dumps_message(msg: Dict[str, Any]) -> str:
    """:func:`_dumps` of a message, the same text, with its top level written here: the constants, small
    integers, plain strings and empty lists the harness's messages are mostly made of, and :class:`Verbatim`
    values, cost no encoder. Nested values go through :func:`_dumps` one by one; anything but an exact dict with
    exact str keys goes through it whole."""
    if type(msg) is not dict:
        return _dumps(msg)
    parts = []
    for key, value in msg.items():
        if type(key) is not str:
            return _dumps(msg)
        name = _KEYS.get(key)
        if name is None:
            name = _KEYS[key] = _encode_str(key) + ":"
        if value is True:
            text = "true"
        elif value is False:
            text = "false"
        elif value is None:
            text = "null"
        else:
            t = type(value)
            if t is int:
                text = int.__repr__(value)
            elif t is str:
                text = _encode_str(value)
            elif t is Verbatim:
                text = value
            elif t is list and not value:
                text = "[]"
            else:
                text = _dumps(value)
        parts.append(name + text)
    return "{" + ",".join(parts) + "}"


def encode_frame(msg: Dict[str, Any]) -> Tuple[bytes, bytes]:
    """Serialise one message: its length header and its body, apart, so that a large body is not copied once
    more to join them. ASCII JSON, so lone surrogates from provider strings stay encodable."""
    text = _dumps_message(msg)
    body = text.encode("ascii")
    del text
    if len(body) > MAX_FRAME:
        raise FrameTooLarge("message is %d bytes, above the %d-byte frame limit" % (len(body), MAX_FRAME))
    return struct.pack(">I", len(body)), body


class Writer:
    """Serialised writes to the reply descriptor, from any thread."""

    def __init__(self, fd: int = OUT_FD) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.closed = False
        #: Bytes written to the reply descriptor so far (for :class:`WriteMeter`).
        self.written = 0

    def send(self, msg: Dict[str, Any]) -> None:
        header, body = encode_frame(msg)
        self.write_frame(header, body)

    def write_frame(self, header: bytes, body: bytes, before: bytes = b"") -> None:
        """Write one encoded frame (``encode_frame``), after ``before`` (whole frames, or nothing)."""
        with self._lock:
            if self.closed:
                return
            # Small frames go in one write, with the frames before them: each write wakes the Go reader once.
            # A large body is written from where it lies.
            parts = [before + header + body] if len(body) < 65536 else [before + header, body]
            for data in parts:
                view = memoryview(data)
                while view:
                    try:
                        n = os.write(self._fd, view)
                    except InterruptedError:
                        continue
                    except OSError as exc:
                        die("the reply channel is gone (%s); exiting" % exc.strerror, 3)
                        return
                    self.written += n
                    view = view[n:]

    def close(self) -> None:
        with self._lock:
            self.closed = True


class EndOfRequests(Exception):
    """Go closed the request descriptor: the harness has nothing more to do."""


class FrameReader:
    """Decodes frames from a non-blocking descriptor, one read at a time (for ``loop.add_reader``).

    A length above :data:`MAX_FRAME`, bad JSON or a non-object ends the process: the stream cannot be
    trusted any more.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        # Read into one reused buffer: os.read(fd, big) allocates (and maps, then unmaps) a fresh buffer of that
        # size on every call, three system calls more per request.
        self._chunk = bytearray(64 << 10)
        self._view = memoryview(self._chunk)

    def read(self, fd: int) -> List[Dict[str, Any]]:
        """Read what ``fd`` holds now and return every message completed by it."""
        try:
            n = os.readv(fd, [self._chunk])
        except (BlockingIOError, InterruptedError):
            return []
        except OSError as exc:
            die("reading requests failed (%s)" % exc.strerror, 3)
            return []
        if not n:
            if self._buf:
                die("harness protocol corrupted: request stream ended inside a frame", 2)
            raise EndOfRequests()
        buf = self._buf
        buf += self._view[:n]
        out: List[Dict[str, Any]] = []
        pos = 0
        while len(buf) - pos >= 4:
            (length,) = struct.unpack_from(">I", buf, pos)
            if length > MAX_FRAME:
                die("harness protocol corrupted: frame of %d bytes exceeds the limit" % length, 2)
            if len(buf) - pos - 4 < length:
                break
            body = bytes(buf[pos + 4 : pos + 4 + length])
            pos += 4 + length
            out.append(decode_request(body))
        if pos:
            del buf[:pos]
        return out


def decode_request(body: bytes) -> Dict[str, Any]:
    """One request from its frame body; anything but a JSON object with a ``kind`` ends the process."""
    try:
        msg = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        die("harness protocol corrupted: a request is not UTF-8 JSON", 2)
        raise
    if not isinstance(msg, dict) or not isinstance(msg.get("kind"), str):
        die("harness protocol corrupted: a request is not an object with a kind", 2)
    return msg


def wait_writable(fd: int) -> None:
    """Block until ``fd`` (set non-blocking by someone else) accepts more bytes."""
    select.select([], [fd], [], 1.0)


def watch_hangup(fd: int = IN_FD, grace_ms: int = 2000, check_ms: int = 1000) -> None:
    """Watchdog thread: end the process when Go goes away, even if the event loop is blocked.

    It polls ``fd`` for hang-up only (no ``POLLIN``), so it never reads a request and costs nothing per call.
    The loop normally sees end of input first and exits on its own; the watchdog gives it ``grace_ms``. A
    descriptor the provider closed is reported as such instead of leaving Go to wait for a reply.
    """
    poller = select.poll()
    poller.register(fd, 0)
    while True:
        try:
            events = poller.poll(check_ms)
        except InterruptedError:
            continue
        if not events:
            try:
                os.fstat(fd)
            except OSError:
                die("the provider closed descriptor %d, which carries requests from astrabox" % fd, 3)
            continue
        if any(ev & select.POLLNVAL for _, ev in events):
            die("the provider closed descriptor %d, which carries requests from astrabox" % fd, 3)
        select.poll().poll(grace_ms)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: B036
            pass
        os._exit(0)


class WriteMeter:
    """Tells whether anything but the harness's own frames was written since the last sync point.

    Linux counts every byte the process passes to ``write(2)`` and its relatives, from any thread, in
    ``wchar`` of ``/proc/self/io``. The harness knows what it wrote itself (frames through :class:`Writer`,
    markers through :meth:`account`); any other difference means the provider wrote somewhere (descriptors 1
    and 2 included), so the output must be cut with sync markers. Without ``/proc`` the meter always says so.
    """

    def __init__(self, writer: Writer) -> None:
        self._writer = writer
        try:
            self._fd: Optional[int] = os.open("/proc/self/io", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = None
        self._base: Optional[int] = None  # wchar at the last sync point, the harness's markers included
        self._own = 0  # Writer.written at the last sync point
        self._pending: Tuple[Optional[int], int] = (None, 0)

    def _wchar(self) -> Optional[int]:
        if self._fd is None:
            return None
        try:
            data = os.pread(self._fd, 1024, 0)
            i = data.index(b"wchar:")
            return int(data[i + 6 : data.index(b"\n", i)])
        except (OSError, ValueError):
            return None

    def quiet_since_sync(self) -> bool:
        """True when only the harness wrote since the last :meth:`synced` (never before the first one).

        The reading is kept for the :meth:`synced` that follows.
        """
        now = self._wchar()
        written = self._writer.written
        self._pending = (now, written)
        if now is None or self._base is None:
            return False
        return now - self._base == written - self._own

    def synced(self, extra: int = 0) -> None:
        """Make the last reading the sync point, plus ``extra`` bytes the harness wrote itself since (markers)."""
        now, written = self._pending
        self._base = None if now is None else now + extra
        self._own = written
