"""Observations: logs, warnings, audit events and leftovers, each tied to the call that caused it.

The call in flight lives in a ``ContextVar``. asyncio propagates it into tasks and handles; the harness
wraps ``threading.Thread.start`` and ``ThreadPoolExecutor.submit`` so that threads and executor jobs the
provider starts carry it too. An observation made by a call that has already returned is marked
``after_return`` and travels in a ``background`` message.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import re
import sys
import sysconfig
import threading
import traceback
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from astrabox._harness.values import MESSAGE_LIMIT, callable_name, safe_str, truncate, type_name

#: The call in flight in this thread or task (``None`` outside any call).
CURRENT_CALL: "contextvars.ContextVar[Optional[int]]" = contextvars.ContextVar("astrabox_call", default=None)

LIST_LIMIT = 1000

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
_QUIET_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})

# Modules whose file opens are imports or source lookups, not provider I/O.
_QUIET_OPENERS = frozenset(
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


class Bucket:
    """Bounded lists of observations waiting for a message."""

    def __init__(self) -> None:
        self.logs: List[Dict[str, Any]] = []
        self.warnings: List[Dict[str, Any]] = []
        self.audit: List[Dict[str, Any]] = []
        self.dropped = 0

    def add(self, kind: str, entry: Dict[str, Any]) -> None:
        items = getattr(self, kind)
        if len(items) >= LIST_LIMIT:
            self.dropped += 1
        else:
            items.append(entry)

    def empty(self) -> bool:
        return not (self.logs or self.warnings or self.audit or self.dropped)

    def export(self) -> Dict[str, Any]:
        return {"logs": self.logs, "warnings": self.warnings, "audit": self.audit, "dropped": self.dropped}


def empty_leftovers() -> Dict[str, List[Dict[str, Any]]]:
    return {"threads": [], "tasks": [], "timers": [], "children": []}


def _code_location(fn: Any) -> Tuple[Optional[str], Optional[int]]:
    try:
        while isinstance(fn, functools.partial):
            fn = fn.func
        fn = getattr(fn, "__func__", fn)
        fn = getattr(fn, "__wrapped__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return None, None
        return code.co_filename, code.co_firstlineno
    except BaseException:  # noqa: B036
        return None, None


def _unwrap_job(fn: Any, args: Tuple[Any, ...]) -> Any:
    """The function an executor job really runs (``asyncio.to_thread`` wraps it in ``ctx.run``)."""
    for _ in range(4):
        if isinstance(fn, functools.partial) and isinstance(getattr(fn.func, "__self__", None), contextvars.Context):
            if fn.args:
                fn, args = fn.args[0], fn.args[1:]
                continue
        if isinstance(getattr(fn, "__self__", None), contextvars.Context) and args:
            fn, args = args[0], args[1:]
            continue
        break
    return fn


# Audit events that start a process; after one, leftovers include child processes.
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "pty.spawn"})


def child_processes() -> Dict[int, str]:
    """Live (non-zombie) processes whose parent is this process, with their command lines."""
    me = os.getpid()
    out: Dict[int, str] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as fh:
                stat = fh.read()
            rest = stat[stat.rindex(b")") + 2 :].split()
            if int(rest[1]) != me or rest[0] == b"Z":
                continue
            with open("/proc/%s/cmdline" % name, "rb") as fh:
                cmd = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = cmd.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "backslashreplace")[:2048]
    return out


class Snapshot:
    """What was alive before a call started."""

    def __init__(self, threads: Set[Any], tasks: Set[Any], timers: Set[Any], children: Set[int]) -> None:
        self.threads = threads
        self.tasks = tasks
        self.timers = timers
        self.children = children


class Observer:
    """Collects every observation and routes it to the reply in flight or to the background."""

    def __init__(self, sdk_dir: str) -> None:
        self.sdk_dir = os.path.realpath(sdk_dir)
        self._sdk_dirs = {sdk_dir.rstrip(os.sep), self.sdk_dir}
        self._lock = threading.RLock()  # re-entrant: a signal handler may log while it is held
        self._local = threading.local()
        self.current = Bucket()
        self.background = Bucket()
        self.in_flight: Optional[int] = None
        self.returned: Set[int] = set()
        self.notify: Optional[Callable[[], None]] = None
        self.own_threads: Set[Any] = set()
        self.own_timers: Set[Any] = set()
        self._jobs: List[Tuple[Optional[int], Any, Any]] = []
        # The call that created each task on the harness's loop, and the child processes each call left.
        self.task_origins: "weakref.WeakKeyDictionary[Any, Optional[int]]" = weakref.WeakKeyDictionary()
        self.children_of: Dict[int, List[int]] = {}
        # Scanning /proc for children costs a file open per process on the machine: only do it once the
        # provider has started a process (an audited spawn) at least once.
        self.spawned = False
        self.pkg_dirs: List[str] = []
        self.roots: List[str] = []
        self._kinds: Dict[str, str] = {}
        stdlib = set()
        paths = sysconfig.get_paths()
        for key in ("stdlib", "platstdlib"):
            if paths.get(key):
                stdlib.add(paths[key])
        stdlib.add(os.path.dirname(os.__file__))
        self._stdlib = sorted({p.rstrip(os.sep) for p in stdlib} | {os.path.realpath(p) for p in stdlib})

    # -- file classification ---------------------------------------------------------------------------

    def set_roots(self, pkg_dirs: List[str], roots: List[str]) -> None:
        """Provider code lives under ``pkg_dirs`` (always) and ``roots`` (outside site-packages)."""
        def both(ps: List[str]) -> List[str]:
            out: List[str] = []
            for p in ps:
                for q in (p.rstrip(os.sep) or os.sep, os.path.realpath(p)):
                    if q not in out:
                        out.append(q)
            return out

        with self._lock:
            self.pkg_dirs = both(pkg_dirs)
            self.roots = both(roots)
            self._kinds = {}

    @staticmethod
    def _under(path: str, root: str) -> bool:
        return path == root or path.startswith(root + os.sep) or (root == os.sep and path.startswith(os.sep))

    def kind(self, filename: str) -> str:
        """``provider``, ``sdk``, ``stdlib`` or ``other`` for a code file name."""
        k = self._kinds.get(filename)
        if k is not None:
            return k
        k = self._classify(filename)
        if len(self._kinds) > 50000:
            self._kinds = {}
        self._kinds[filename] = k
        return k

    def _classify(self, filename: str) -> str:
        if not filename:
            return "other"
        if filename.startswith("<"):
            return "stdlib" if filename.startswith("<frozen") else "other"
        path = filename if os.path.isabs(filename) else os.path.abspath(filename)
        for d in self.pkg_dirs:
            if self._under(path, d):
                return "provider"
        for d in self._sdk_dirs:
            if self._under(path, d):
                return "sdk"
        in_site = (os.sep + "site-packages" + os.sep) in path or (os.sep + "dist-packages" + os.sep) in path
        in_stdlib = not in_site and any(self._under(path, d) for d in self._stdlib)
        if in_stdlib:
            return "stdlib"
        if not in_site:
            for d in self.roots:
                if self._under(path, d):
                    return "provider"
        return "other"

    def is_provider_file(self, filename: str) -> bool:
        return self.kind(filename) == "provider"

    # -- routing ---------------------------------------------------------------------------------------

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """The harness's own work in this thread: record nothing it causes."""
        prev = getattr(self._local, "busy", False)
        self._local.busy = True
        try:
            yield
        finally:
            self._local.busy = prev

    def _record(self, kind: str, entry: Dict[str, Any]) -> None:
        call = CURRENT_CALL.get()
        notify = None
        with self._lock:
            after = call is not None and call in self.returned
            entry["call"] = call
            entry["after_return"] = after
            if call is not None and call == self.in_flight and not after:
                self.current.add(kind, entry)
            else:
                self.background.add(kind, entry)
                if self.in_flight is None:
                    notify = self.notify
        if notify is not None:
            notify()

    def begin_call(self, call_id: int) -> None:
        with self._lock:
            self.in_flight = call_id
            self.current = Bucket()

    def mark_returned(self, call_id: int) -> None:
        with self._lock:
            self.returned.add(call_id)

    def take_current(self) -> Dict[str, Any]:
        with self._lock:
            out = self.current.export()
            self.current = Bucket()
            return out

    def end_call(self) -> bool:
        """Mark the harness idle; True when background observations are waiting (one recorded after the reply
        was built but before this point did not notify, since a call was still in flight)."""
        with self._lock:
            self.in_flight = None
            return not self.background.empty()

    def take_background(self) -> Optional[Dict[str, Any]]:
        with self._lock:
            if self.background.empty():
                return None
            out = self.background.export()
            self.background = Bucket()
        out["leftovers"] = empty_leftovers()
        return out

    # -- sources ---------------------------------------------------------------------------------------

    def install(self) -> None:
        """Install the log-record factory, the warnings wrapper, the audit hook and thread propagation."""
        self._install_logging()
        self._install_warnings()
        self._install_threads()
        self._install_http()
        sys.addaudithook(self._audit_hook)

    def _install_http(self) -> None:
        """Tag requests to the deployment double with the call whose code made them.

        The double attributes a request to the call in flight on its replica; a thread or task a finished call
        left behind would be blamed on whichever call runs next. ``http.client`` (used by urllib, requests and
        urllib3) learns the true origin from the call ``ContextVar`` and adds ``X-Astrabox-Call: <pid>:<call>``
        to requests bound for the double only.
        """
        import http.client
        from urllib.parse import urlsplit

        url = os.environ.get("ASTRABOX_DOUBLE_URL", "")
        if not url:
            return
        try:
            parts = urlsplit(url)
            target = (parts.hostname, parts.port)
        except ValueError:
            return
        original = http.client.HTTPConnection.putrequest
        pid = os.getpid()

        def putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> None:
            original(conn, method, url, *args, **kwargs)
            call = CURRENT_CALL.get()
            if call is None:
                return
            try:
                if (conn.host, conn.port) == target:
                    conn.putheader("X-Astrabox-Call", "%d:%d" % (pid, call))
            except Exception:  # noqa: BLE001 - never break the provider's request
                pass

        http.client.HTTPConnection.putrequest = putrequest  # type: ignore[method-assign]

    def _guarded(self, fn: Callable[..., None], *args: Any) -> None:
        if getattr(self._local, "busy", False):
            return
        self._local.busy = True
        try:
            fn(*args)
        except BaseException:  # noqa: B036 - an observation must never break the provider
            pass
        finally:
            self._local.busy = False

    def _install_logging(self) -> None:
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            self._guarded(self._log, record)
            return record

        logging.setLogRecordFactory(factory)

    def _log(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except BaseException as exc:  # noqa: B036
            message = "<formatting the log message raised %s; format: %s>" % (
                type_name(type(exc)),
                safe_str(record.msg, 1024),
            )
        exc_text = None
        if record.exc_info and record.exc_info[0] is not None:
            try:
                exc_text = "".join(traceback.format_exception(*record.exc_info))
            except BaseException:  # noqa: B036
                exc_text = "<formatting the exception failed>"
            exc_text = truncate(exc_text, MESSAGE_LIMIT)
        self._record(
            "logs",
            {
                "logger": safe_str(record.name, 256),
                "level": safe_str(record.levelname, 64),
                "levelno": record.levelno if isinstance(record.levelno, int) else 0,
                "message": truncate(message if isinstance(message, str) else safe_str(message), MESSAGE_LIMIT),
                "exc_text": exc_text,
                "file": record.pathname,
                "line": record.lineno,
                "function": record.funcName,
                "thread": record.threadName,
            },
        )

    def _install_warnings(self) -> None:
        original = warnings.showwarning
        observer = self

        def showwarning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
            observer._guarded(observer._warning, message, category, filename, lineno)
            return original(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

    def _warning(self, message: Any, category: Any, filename: Any, lineno: Any) -> None:
        self._record(
            "warnings",
            {
                "category": getattr(category, "__name__", None) or type_name(type(message)),
                "message": safe_str(message, MESSAGE_LIMIT),
                "file": filename if isinstance(filename, str) else safe_str(filename, 1024),
                "line": lineno if isinstance(lineno, int) else None,
            },
        )

    def _install_threads(self) -> None:
        original_start = threading.Thread.start

        def start(thread: threading.Thread) -> None:
            try:
                ctx = contextvars.copy_context()
                # partial and Context.run are C callables: no harness frame appears in the thread's stack.
                thread.run = functools.partial(ctx.run, thread.run)  # type: ignore[method-assign]
                # The call whose code started the thread (threading.Timer included): settling waits for it.
                thread._astrabox_origin = ctx.get(CURRENT_CALL)  # type: ignore[attr-defined]
            except BaseException:  # noqa: B036
                pass
            return original_start(thread)

        start.__wrapped__ = original_start  # type: ignore[attr-defined]
        threading.Thread.start = start  # type: ignore[method-assign]

        original_submit = ThreadPoolExecutor.submit
        observer = self

        def submit(executor: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            ctx = contextvars.copy_context()
            future = original_submit(executor, ctx.run, fn, *args, **kwargs)
            observer._track_job(ctx.get(CURRENT_CALL), future, _unwrap_job(fn, args))
            return future

        submit.__wrapped__ = original_submit  # type: ignore[attr-defined]
        ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]

    def track_tasks(self, loop: Any) -> None:
        """Remember which call created each task on the harness's loop (``asyncio.create_task`` and
        ``ensure_future`` go through ``loop.create_task``), so that settling can wait for a call's tasks."""
        original = loop.create_task
        origins = self.task_origins

        def create_task(coro: Any, *args: Any, **kwargs: Any) -> Any:
            task = original(coro, *args, **kwargs)
            try:
                ctx = kwargs.get("context")
                origins[task] = ctx.get(CURRENT_CALL) if ctx is not None else CURRENT_CALL.get()
            except BaseException:  # noqa: B036 - never break the provider's task
                pass
            return task

        create_task.__wrapped__ = original  # type: ignore[attr-defined]
        loop.create_task = create_task

    def work_of(self, loop: Any, calls: Set[int]) -> Dict[str, List[Dict[str, Any]]]:
        """The work still running that code of one of ``calls`` started: threads (timers included), tasks,
        loop timers and executor jobs, wherever they were started from (a thread a thread started inherits
        the call), plus the child processes those calls left."""
        out = empty_leftovers()
        with self.quiet():
            for t in threading.enumerate():
                if t in self.own_threads or getattr(t, "_astrabox_origin", None) not in calls or not t.is_alive():
                    continue
                target = getattr(t, "function", None) if isinstance(t, threading.Timer) else getattr(t, "_target", None)
                if callable_name(target) == "concurrent.futures.thread._worker":
                    continue  # an executor worker: its pending jobs are counted below
                file, line = _code_location(target)
                out["threads"].append({"name": t.name, "daemon": t.daemon, "target": callable_name(target) if target else None,
                                       "file": file, "line": line})
            with self._lock:
                jobs = [j for j in self._jobs if j[0] in calls and not j[1].done()]
            for _, _, fn in jobs:
                file, line = _code_location(fn)
                out["threads"].append({"name": "executor job", "daemon": True, "target": callable_name(fn), "file": file, "line": line})
            for task, origin in list(self.task_origins.items()):
                if origin in calls and not task.done():
                    coro = task.get_coro()
                    code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
                    out["tasks"].append({"name": task.get_name(), "coro": getattr(coro, "__qualname__", None) or type_name(type(coro)),
                                         "file": code.co_filename if code is not None else None,
                                         "line": code.co_firstlineno if code is not None else None})
            now = loop.time()
            for h in self._timers(loop):
                ctx = getattr(h, "_context", None)
                try:
                    origin = ctx.get(CURRENT_CALL) if ctx is not None else None
                except BaseException:  # noqa: B036
                    origin = None
                name = callable_name(getattr(h, "_callback", None))
                if origin in calls and not name.startswith("asyncio."):
                    out["timers"].append({"callback": name, "when_s": round(h.when() - now, 6)})
            if self.spawned:
                alive = child_processes()
                for call in sorted(calls):
                    for pid in self.children_of.get(call, ()):
                        if pid in alive:
                            out["children"].append({"pid": pid, "cmdline": alive[pid]})
        return out

    def _track_job(self, call: Optional[int], future: Any, fn: Any) -> None:
        if call is None:
            return
        with self._lock:
            if len(self._jobs) > 200:
                self._jobs = [j for j in self._jobs if not j[1].done()]
            self._jobs.append((call, future, fn))

    def _audit_hook(self, event: str, args: Tuple[Any, ...]) -> None:
        if event in SPAWN_EVENTS:
            self.spawned = True
        if event not in AUDIT_EVENTS and not event.startswith("shutil."):
            return
        if getattr(self._local, "busy", False):
            return
        self._local.busy = True
        try:
            self._audit(event, args, sys._getframe(1))
        except BaseException:  # noqa: B036
            pass
        finally:
            self._local.busy = False

    def _audit(self, event: str, args: Tuple[Any, ...], frame: Any) -> None:
        provider = None
        fallback = None
        in_prefix = True
        f = frame
        while f is not None:
            k = self.kind(f.f_code.co_filename)
            if in_prefix:
                if k == "stdlib":
                    if event in _QUIET_EVENTS and f.f_globals.get("__name__") in _QUIET_OPENERS:
                        return
                else:
                    in_prefix = False
            if k == "provider":
                provider = f
                break
            if fallback is None and k == "other":
                fallback = f
            f = f.f_back
        summary = summarise(event, args)
        if summary is None:
            return
        where = provider or fallback
        self._record(
            "audit",
            {
                "event": event,
                "summary": truncate(summary, MESSAGE_LIMIT),
                "file": where.f_code.co_filename if where is not None else None,
                "line": where.f_lineno if where is not None else None,
                "function": where.f_code.co_name if where is not None else None,
            },
        )

    # -- leftovers -------------------------------------------------------------------------------------

    def snapshot(self, loop: Any) -> Snapshot:
        """What is alive now (never raises). Cheap on purpose: it runs before every call."""
        try:
            children: Set[int] = set()
            if self.spawned:
                with self.quiet():
                    children = set(child_processes())
            return Snapshot(set(threading.enumerate()), set(asyncio.all_tasks(loop)), set(self._timers(loop)),
                            children)
        except BaseException:  # noqa: B036 - e.g. a provider thread with a broken __hash__
            return Snapshot(set(), set(), set(), set())

    def safe_leftovers(self, loop: Any, before: Snapshot, call_id: int, own_tasks: Set[Any]) -> Tuple[Dict[str, Any], int]:
        """:meth:`leftovers`, or nothing (counted as one dropped entry) if inspecting them failed."""
        try:
            return self.leftovers(loop, before, call_id, own_tasks)
        except BaseException:  # noqa: B036
            return empty_leftovers(), 1

    @staticmethod
    def _timers(loop: Any) -> List[Any]:
        try:
            return [h for h in list(getattr(loop, "_scheduled", ())) if not h.cancelled()]
        except BaseException:  # noqa: B036
            return []

    def leftovers(self, loop: Any, before: Snapshot, call_id: int, own_tasks: Set[Any]) -> Tuple[Dict[str, Any], int]:
        """What the call left alive, and how many entries were cut by the bounds."""
        threads = [t for t in threading.enumerate() if t not in before.threads and t not in self.own_threads]
        tasks = [t for t in asyncio.all_tasks(loop) if t not in before.tasks and t not in own_tasks]
        timers = [h for h in self._timers(loop) if h not in before.timers and h not in self.own_timers]
        if not (threads or tasks or timers or self._jobs or self.spawned):
            return empty_leftovers(), 0  # the common case: nothing new, nothing to describe
        out = empty_leftovers()
        with self.quiet():
            for t in threads:
                if not t.is_alive():
                    continue
                target = getattr(t, "_target", None)
                if isinstance(t, threading.Timer):
                    target = getattr(t, "function", None)
                if target is None and type(t).run is not threading.Thread.run:
                    target = type(t).run
                if callable_name(target) == "concurrent.futures.thread._worker":
                    continue  # an executor worker: reported below by its pending jobs, idle ones are fine
                file, line = _code_location(target)
                out["threads"].append(
                    {"name": t.name, "daemon": t.daemon, "target": callable_name(target) if target else None,
                     "file": file, "line": line}
                )
            with self._lock:
                jobs = [j for j in self._jobs if j[0] == call_id and not j[1].done()]
                self._jobs = [j for j in self._jobs if not j[1].done()]
            for _, _, fn in jobs:
                file, line = _code_location(fn)
                out["threads"].append(
                    {"name": "executor job", "daemon": True, "target": callable_name(fn), "file": file, "line": line}
                )
            for task in tasks:
                if task.done():
                    continue
                coro = task.get_coro()
                code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
                frame = getattr(coro, "cr_frame", None)
                module = frame.f_globals.get("__name__") if frame is not None else None
                qual = getattr(coro, "__qualname__", None) or type_name(type(coro))
                out["tasks"].append(
                    {
                        "name": task.get_name(),
                        "coro": "%s.%s" % (module, qual) if module else qual,
                        "file": code.co_filename if code is not None else None,
                        "line": code.co_firstlineno if code is not None else None,
                    }
                )
            now = loop.time()
            for h in timers:
                cb = getattr(h, "_callback", None)
                name = callable_name(cb)
                if name.startswith("asyncio."):
                    continue  # the wake-up of a sleeping task, already reported as a task
                out["timers"].append({"callback": name, "when_s": round(h.when() - now, 6)})
            for pid, cmd in sorted((child_processes() if self.spawned else {}).items()):
                if pid not in before.children:
                    out["children"].append({"pid": pid, "cmdline": cmd})
            if out["children"]:
                self.children_of[call_id] = [c["pid"] for c in out["children"]]
        dropped = 0
        for key in out:
            if len(out[key]) > LIST_LIMIT:
                dropped += len(out[key]) - LIST_LIMIT
                del out[key][LIST_LIMIT:]
        return out, dropped
