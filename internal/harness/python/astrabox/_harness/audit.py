"""Classification of audit events: which PEP 578 events are observations, and their secret-free summaries.

Only the events in :data:`AUDIT_EVENTS` (and ``shutil.*``) are recorded; :func:`summarise` turns one into a
short description that never carries a request body, a query string or user information.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional, Tuple

from astrabox._harness.values import safe_str

AUDIT_EVENTS = frozenset(
    {
        "open",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
        "socket.sendto",
        "socket.sendmsg",
        "socket.bind",
        "urllib.Request",
        "http.client.connect",
        "http.client.send",
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.fork",
        "os.kill",
        "os.remove",
        "os.rename",
        "os.mkdir",
        "os.listdir",
        "os.scandir",
        "sqlite3.connect",
        "time.sleep",
    }
)

# Events the import system and source lookups fire themselves (reading modules, listing directories on
# sys.path): not provider I/O when a quiet opener below makes them.
QUIET_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})

# Modules whose file opens are imports or source lookups, not provider I/O.
QUIET_OPENERS = frozenset(
    {"importlib._bootstrap", "importlib._bootstrap_external", "zipimport", "linecache", "tokenize"}
)

_REQUEST_LINE = re.compile(rb"^([A-Z][A-Z0-9_-]{0,31}) (\S{1,8192}) HTTP/\d")


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, int) and not isinstance(value, bool):
        return "fd %d" % value
    try:
        return os.fspath(value) if isinstance(value, os.PathLike) else safe_str(value, 2048)
    except BaseException:  # noqa: B036
        return "?"


def _open_mode(flags: Any) -> str:
    if not isinstance(flags, int):
        return "?"
    acc = flags & os.O_ACCMODE
    mode = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}.get(acc, "?")
    if flags & os.O_APPEND:
        mode += "a"
    if flags & os.O_CREAT:
        mode += "c"
    return mode


def _argv(args: Any) -> str:
    if isinstance(args, (str, bytes, os.PathLike)):
        return _text(args)
    try:
        return " ".join(_text(a) for a in list(args)[:200])
    except BaseException:  # noqa: B036
        return _text(args)


def _strip_url(url: Any) -> str:
    """scheme://host[:port]/path: no user information, no query, no fragment."""
    from urllib.parse import urlsplit

    text = _text(url)
    try:
        parts = urlsplit(text)
        host = parts.hostname or ""
        port = ":%d" % parts.port if parts.port else ""
        return "%s://%s%s%s" % (parts.scheme, host, port, parts.path or "/")
    except ValueError:
        return "<unparsable url>"


def summarise(event: str, args: Tuple[Any, ...]) -> Optional[str]:
    """A short, secret-free description of an audit event, or ``None`` to skip the event."""
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        return "%s %s" % (_text(path), mode if isinstance(mode, str) else _open_mode(flags))
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind"):
        addr = args[1] if len(args) > 1 else None
        if isinstance(addr, tuple) and len(addr) >= 2:
            return "%s:%s" % (_text(addr[0]), _text(addr[1]) if not isinstance(addr[1], int) else addr[1])
        return _text(addr)
    if event == "socket.getaddrinfo":
        host = args[0] if args else None
        port = args[1] if len(args) > 1 else None
        return "%s:%s" % (_text(host), port if isinstance(port, int) else _text(port))
    if event in ("socket.gethostbyname", "socket.gethostbyaddr"):
        return _text(args[0]) if args else ""
    if event == "socket.getnameinfo":
        addr = args[0] if args else None
        if isinstance(addr, tuple) and len(addr) >= 2:
            return "%s:%s" % (_text(addr[0]), addr[1] if isinstance(addr[1], int) else _text(addr[1]))
        return _text(addr)
    if event in ("os.listdir", "os.scandir"):
        return _text(args[0]) if args and args[0] is not None else "."
    if event == "urllib.Request":
        url, data = args[0], args[1] if len(args) > 1 else None
        method = args[3] if len(args) > 3 and args[3] else ("POST" if data is not None else "GET")
        return "%s %s" % (_text(method), _strip_url(url))
    if event == "http.client.connect":
        return "%s:%s" % (_text(args[1]), args[2] if isinstance(args[2], int) else _text(args[2]))
    if event == "http.client.send":
        data = args[1] if len(args) > 1 else None
        if isinstance(data, str):
            data = data[:9000].encode("latin-1", "replace")
        if not isinstance(data, (bytes, bytearray)):
            return None
        m = _REQUEST_LINE.match(bytes(data[:9000]))
        if m is None:
            return None  # a body or header chunk: never recorded
        path = m.group(2).split(b"?", 1)[0].split(b"#", 1)[0]
        return "%s %s" % (m.group(1).decode("ascii"), path.decode("utf-8", "backslashreplace"))
    if event == "subprocess.Popen":
        return _argv(args[1] if len(args) > 1 and args[1] is not None else args[0])
    if event == "os.system":
        return _text(args[0])
    if event in ("os.exec", "os.posix_spawn"):
        return _argv(args[1] if len(args) > 1 else args[0])
    if event == "os.fork":
        return ""
    if event == "os.kill":
        return "%s %s" % (args[0], args[1])
    if event == "os.rename":
        return "%s -> %s" % (_text(args[0]), _text(args[1]))
    if event in ("os.remove", "os.mkdir", "sqlite3.connect"):
        return _text(args[0])
    if event == "time.sleep":
        return safe_str(args[0], 64) if args else ""
    if event.startswith("shutil."):
        return " ".join(_text(a) for a in args[:4])
    return None


# Audit events that start a process; after one, leftovers include child processes.
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "pty.spawn"})


def observed(event: str) -> bool:
    """Whether an audit event is one the harness records."""
    return event in AUDIT_EVENTS or event.startswith("shutil.")
