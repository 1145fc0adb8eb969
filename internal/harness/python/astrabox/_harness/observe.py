"""Observations: logs, warnings, audit events and leftovers, each tied to the call that caused it.

:class:`Observer` installs the observation sources (the log-record factory, the warnings wrapper, the audit
hook, thread and executor propagation, the call header on requests to the double) and puts together the
parts that do the work, one job each:

- :mod:`~astrabox._harness.audit`: which audit events are observations, and their secret-free summaries;
- :mod:`~astrabox._harness.sources`: which code file is the provider's and where an event was caused;
- :mod:`~astrabox._harness.connections`: the call and line that opened each loopback TCP connection;
- :mod:`~astrabox._harness.sends`: which call's code wrote each run of bytes on such a connection;
- :mod:`~astrabox._harness.routing`: the call ``ContextVar`` and routing to the reply or the background;
- :mod:`~astrabox._harness.leftovers`: the work each call started, its leftovers and settling;
- :mod:`~astrabox._harness.units`: which unit of a call's work issued each request, and which units the
  callback waited for;
- :mod:`~astrabox._harness.records`: the typed records, mirroring internal/harness/messages.go.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
import warnings
from typing import Any, Callable, List, Optional, Set, Tuple

from astrabox._harness import audit, connections, native, sends, trust
from astrabox._harness.leftovers import Snapshot, Work
from astrabox._harness.records import AuditEvent, Connection, Leftovers, LogRecord, Observations, Send, WarningRecord
from astrabox._harness.routing import CURRENT_CALL, SUBMITTED_AT, Quiet, Router
from astrabox._harness.sources import OTHER, CodeKinds, own_location
from astrabox._harness.units import WORK_HEADER, Units
from astrabox._harness.values import MESSAGE_LIMIT, safe_str, truncate, type_name

__all__ = ["CURRENT_CALL", "Observer", "PREPARED", "Snapshot"]

#: The observer a fork server prepared for the harnesses it forks (at most one; see Observer.prepare).
PREPARED: List["Observer"] = []


class Observer:
    """Collects every observation and routes it to the reply in flight or to the background."""

    def __init__(self, sdk_dir: str) -> None:
        self._prepared = False
        self.router = Router()
        self.code = CodeKinds(sdk_dir)
        self.units = Units()
        self.work = Work(self.router, self.units)
        self.work.locate = lambda frame: own_location(self.code, frame)
        self.work.library_file = lambda filename: bool(filename) and self.code.kind(filename) == OTHER
        self.sdk_dir = self.code.sdk_dir

    # -- what the runner and the loader use --------------------------------------------------------------

    def set_roots(self, pkg_dirs: List[str], roots: List[str]) -> None:
        """Provider code lives under ``pkg_dirs`` (always) and ``roots`` (outside site-packages)."""
        with self.router.lock:
            self.code.set_roots(pkg_dirs, roots)

    def kind(self, filename: str) -> str:
        """``provider``, ``sdk``, ``stdlib`` or ``other`` for a code file name."""
        return self.code.kind(filename)

    def is_provider_file(self, filename: str) -> bool:
        return self.code.is_provider_file(filename)

    def quiet(self) -> Quiet:
        """The harness's own work in this thread: record nothing it causes (``with observer.quiet(): ...``)."""
        return self.router.quiet()

    @property
    def notify(self) -> Optional[Callable[[], None]]:
        return self.router.notify

    @notify.setter
    def notify(self, fn: Optional[Callable[[], None]]) -> None:
        self.router.notify = fn

    @property
    def own_threads(self) -> Set[Any]:
        return self.work.own_threads

    @property
    def spawned(self) -> bool:
        return self.work.spawned

    def begin_call(self, call_id: int) -> None:
        self.router.begin_call(call_id)

    def mark_returned(self, call_id: int) -> None:
        self.router.mark_returned(call_id)

    def take_current(self) -> Observations:
        return self.router.take_current()

    def end_call(self) -> bool:
        return self.router.end_call()

    def take_background(self) -> Optional[Observations]:
        return self.router.take_background()

    def track_tasks(self, loop: Any) -> None:
        self.work.track_tasks(loop)

    def snapshot(self, loop: Any) -> Snapshot:
        return self.work.snapshot(loop)

    def safe_leftovers(self, loop: Any, before: Snapshot, call_id: int, own_tasks: Set[Any]) -> Tuple[Leftovers, int]:
        return self.work.safe_leftovers(loop, before, call_id, own_tasks)

    def work_of(self, loop: Any, calls: Set[int]) -> Leftovers:
        return self.work.work_of(loop, calls)

    # -- sources -------------------------------------------------------------------------------------------

    @classmethod
    def for_process(cls, sdk_dir: str) -> "Observer":
        """The observer of this harness: the one its fork server prepared (see :meth:`prepare`), now listening
        in this process, else a new one."""
        if PREPARED:
            observer = PREPARED.pop()
            observer.set_quiet(False)
            return observer
        return cls(sdk_dir)

    def prepare(self) -> None:
        """Install the observation sources that are the same in every harness and read nothing of its
        environment or its pid: the log-record factory, the warnings wrapper, thread and executor propagation,
        the units' wrappers and the send meter's. A fork server prepares one observer, kept quiet in it, for
        every harness it forks (``zygote.preload``), so that no forked harness wraps those classes again (each
        wrap of a class costs a child copy-on-write faults in the class and all its subclasses). Idempotent."""
        if self._prepared:
            return
        self._prepared = True
        self._install_logging()
        self._install_warnings()
        self.work.install_threads()
        self.units.install()
        sends.emit = self._send_run
        sends.who = self.units.current
        sends.install()

    def set_quiet(self, quiet: bool) -> None:
        """Mark this thread as doing the harness's own work (record nothing it causes) or not, outside a
        ``with``: a fork server keeps the observer it prepared quiet, and the harness it forks turns it on."""
        self.router._local.busy = quiet

    def install(self) -> None:
        """Install the log-record factory, the warnings wrapper, the audit hook and thread propagation (what
        :meth:`prepare` did not already), and the parts that depend on this process: the call header on
        requests to the double (its URL and this pid) and the audit hook."""
        self.prepare()
        self._install_http()
        sys.addaudithook(self._audit_hook)

    def install_trust(self, declared: Callable[[str], bool]) -> bool:
        """Make every client library trust the run's CA and report failed verifications (see :mod:`trust`);
        ``declared`` tells whether a host is a declared service."""
        return trust.install(self.router.record, self.router.guarded, lambda frame: self._where(frame),
                             self.code.is_provider_file, declared)

    def _where(self, frame: Any) -> Any:
        where = own_location(self.code, frame)
        if where.file is None:
            where = SUBMITTED_AT.get() or where
        return where

    def scan_native(self) -> None:
        """Record the C-level network clients loaded since the last scan (see :mod:`native`)."""
        router = self.router
        router.guarded(native.scan, router.record, lambda entry: router.guarded(router.record, entry))

    def _install_http(self) -> None:
        """Tag requests to the deployment double with the call whose code made them.

        The double attributes a request to the call in flight on its replica; a thread or task a finished call
        left behind would be blamed on whichever call runs next. ``http.client`` (used by urllib, requests and
        urllib3) learns the true origin from the call ``ContextVar`` and adds ``X-Astrabox-Call: <pid>:<call>``
        to requests bound for the double only, with ``X-Astrabox-Work``: the unit of the call's work that issues
        it (see :mod:`~astrabox._harness.units`).
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
        units = self.units

        def putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> None:
            original(conn, method, url, *args, **kwargs)
            call = CURRENT_CALL.get()
            if call is None:
                return
            try:
                if (conn.host, conn.port) == target:
                    conn.putheader("X-Astrabox-Call", "%d:%d" % (pid, call))
                    work = units.tag()
                    if work is not None:
                        conn.putheader(WORK_HEADER, work)
            except Exception:  # noqa: BLE001 - never break the provider's request
                pass

        http.client.HTTPConnection.putrequest = putrequest  # type: ignore[method-assign]

    def _install_logging(self) -> None:
        previous = logging.getLogRecordFactory()
        guarded = self.router.guarded

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            guarded(self._log, record)
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
        self.router.record(
            LogRecord(
                logger=safe_str(record.name, 256),
                level=safe_str(record.levelname, 64),
                levelno=record.levelno if isinstance(record.levelno, int) else 0,
                message=truncate(message if isinstance(message, str) else safe_str(message), MESSAGE_LIMIT),
                exc_text=exc_text,
                file=record.pathname,
                line=record.lineno,
                function=record.funcName,
                thread=record.threadName,
            )
        )

    def _install_warnings(self) -> None:
        original = warnings.showwarning
        observer = self

        def showwarning(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
            observer.router.guarded(observer._warning, message, category, filename, lineno)
            return original(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

    def _warning(self, message: Any, category: Any, filename: Any, lineno: Any) -> None:
        self.router.record(
            WarningRecord(
                category=getattr(category, "__name__", None) or type_name(type(message)),
                message=safe_str(message, MESSAGE_LIMIT),
                file=filename if isinstance(filename, str) else safe_str(filename, 1024),
                line=lineno if isinstance(lineno, int) else None,
            )
        )

    def _audit_hook(self, event: str, args: Tuple[Any, ...]) -> None:
        if event in audit.SPAWN_EVENTS:
            self.work.spawned = True
        if not audit.observed(event):
            return
        if self.router.busy():
            return
        frame = sys._getframe(1)
        if event == "socket.connect":
            self.router.guarded(self._connection, args, frame)
        self.router.guarded(self._audit, event, args, frame)

    def _connection(self, args: Tuple[Any, ...], frame: Any) -> None:
        """Tag a loopback TCP connection with the call whose code opens it (see :mod:`connections`)."""
        if len(args) < 2:
            return
        tagged = connections.tag(args[0], args[1])
        if tagged is None:
            return
        seq, port, dest = tagged
        where = own_location(self.code, frame)
        if where.file is None:
            where = SUBMITTED_AT.get() or where  # library code on an executor thread (asyncio's resolver)
        self.router.record(Connection(seq, port, dest, where.file, where.line, where.function,
                                      issuer=self.units.issuer()))
        sends.meter_socket(args[0], seq)

    def _send_run(self, run: Send) -> None:
        """Report a run of bytes the code running now began on a connection (see :mod:`sends`), with the unit
        of the call's work that wrote it."""
        try:
            run.issuer = self.units.issuer()
            self.router.record(run)
        except BaseException:  # noqa: B036 - an observation must never break the provider's write
            pass

    def _audit(self, event: str, args: Tuple[Any, ...], frame: Any) -> None:
        where = self.code.locate(event, frame)
        if where is None:
            return
        summary = audit.summarise(event, args)
        if summary is None:
            return
        self.router.record(AuditEvent(event, truncate(summary, MESSAGE_LIMIT), where.file, where.line, where.function))
