"""Typed wire records: the Python mirror of the observation and result types in internal/harness/messages.go.

Each record names its Go type in its docstring (``Go: ``Name````) and knows its wire form (``wire()``), a dict
whose keys are the Go type's JSON keys (docs/protocol.md, "Observations" and "Reply value by result type").
A record's fields are named as those keys; a field that never goes on the wire (state the harness keeps
while it fills the record) is declared with ``field(..., compare=False)``. Go's -short test
TestPythonRecordsMirrorGo holds every record's fields to its Go type's keys, so a field added on one side
only fails it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

#: At most this many entries of one kind per message; the rest are counted in ``dropped``.
LIST_LIMIT = 1000


@dataclass
class LogRecord:
    """One logging record the provider created (Go: ``LogRecord``)."""

    KIND = "logs"
    logger: str
    level: str
    levelno: int
    message: str
    exc_text: Optional[str]
    file: Any
    line: Any
    function: Any
    thread: Any
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"logger": self.logger, "level": self.level, "levelno": self.levelno, "message": self.message,
                "exc_text": self.exc_text, "file": self.file, "line": self.line, "function": self.function,
                "thread": self.thread, "call": self.call, "after_return": self.after_return}


@dataclass
class WarningRecord:
    """One warning shown while the provider ran (Go: ``WarningRecord``)."""

    KIND = "warnings"
    category: str
    message: str
    file: str
    line: Optional[int]
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"category": self.category, "message": self.message, "file": self.file, "line": self.line,
                "call": self.call, "after_return": self.after_return}


@dataclass
class AuditEvent:
    """One PEP 578 audit event the provider caused (Go: ``AuditEvent``)."""

    KIND = "audit"
    event: str
    summary: str
    file: Optional[str]
    line: Optional[int]
    function: Optional[str]
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"event": self.event, "summary": self.summary, "file": self.file, "line": self.line,
                "function": self.function, "call": self.call, "after_return": self.after_return}


@dataclass
class Connection:
    """A loopback TCP connection the provider's code opened (Go: ``Connection``).

    ``port`` is the socket's local port (bound to an ephemeral one first when it was unbound), ``dest_port``
    the port it connects to, and ``file``/``line``/``function`` the innermost frame of the provider's own
    files on the stack: the platform matches the record to the requests that arrive over the connection.
    """

    KIND = "connections"
    seq: int
    port: int
    dest_port: int
    file: Optional[str]
    line: Optional[int]
    function: Optional[str]
    #: The unit of the call's work that opened it (see :mod:`~astrabox._harness.units`), or None.
    issuer: Optional[Dict[str, Any]] = None
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"seq": self.seq, "port": self.port, "dest_port": self.dest_port, "file": self.file,
                "line": self.line, "function": self.function, "call": self.call, "after_return": self.after_return,
                "issuer": self.issuer}


@dataclass
class Send:
    """A run of bytes written on a tagged connection by one call's code (Go: ``Send``).

    ``seq`` is the connection's :class:`Connection` ``seq``; ``offset`` and ``end`` are the plaintext offsets
    of the run's first byte and past its last in the connection's stream (what the provider wrote, before
    any TLS). The meter extends ``end`` under ``lock`` until the record is written out (``sealed``); later
    bytes start another run. ``lost`` marks the offset from which counting stopped (a write that failed
    part-way). The call is the one in the ``ContextVar`` of the code that wrote (see :mod:`sends`).
    """

    KIND = "sends"
    seq: int
    offset: int
    end: int
    lost: bool = False
    call: Optional[int] = None
    after_return: bool = False
    issuer: Optional[Dict[str, Any]] = None
    sealed: bool = field(default=False, repr=False, compare=False)
    lock: Any = field(default=None, repr=False, compare=False)

    def wire(self) -> Dict[str, Any]:
        lock = self.lock
        if lock is not None:
            lock.acquire()
        self.sealed = True
        end = self.end
        if lock is not None:
            lock.release()
        out: Dict[str, Any] = {"seq": self.seq, "offset": self.offset, "end": end, "call": self.call,
                               "after_return": self.after_return, "issuer": self.issuer}
        if self.lost:
            out["lost"] = True
        return out


@dataclass
class TLSFailure:
    """A TLS handshake with a declared service whose certificate verification failed (Go: ``TLSFailure``).

    ``library`` is the library the provider called, ``context_library`` the one that loaded the context's
    trust store, ``trust`` what was loaded into it, ``run_ca`` whether the run's authority was among it.
    """

    KIND = "tls"
    host: str
    library: str
    context_library: str
    trust: List[str]
    run_ca: bool
    message: str
    file: Optional[str]
    line: Optional[int]
    function: Optional[str]
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"host": self.host, "library": self.library, "context_library": self.context_library,
                "trust": self.trust, "run_ca": self.run_ca, "message": self.message, "file": self.file,
                "line": self.line, "function": self.function, "call": self.call, "after_return": self.after_return}


@dataclass
class NativeClient:
    """A module that resolves names or opens connections in C, below the harness's socket hooks, seen loaded
    in the replica (Go: ``NativeClient``)."""

    KIND = "native"
    module: str
    library: str
    call: Optional[int] = None
    after_return: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"module": self.module, "library": self.library, "call": self.call, "after_return": self.after_return}


@dataclass
class LeftoverThread:
    """A thread (or pending executor job) a call started that is still alive (Go: ``LeftoverThread``)."""

    name: str
    daemon: bool
    target: Optional[str]
    file: Optional[str]
    line: Optional[int]

    def wire(self) -> Dict[str, Any]:
        return {"name": self.name, "daemon": self.daemon, "target": self.target, "file": self.file,
                "line": self.line}


@dataclass
class LeftoverTask:
    """An asyncio task a call started that is still pending (Go: ``LeftoverTask``)."""

    name: str
    coro: str
    file: Optional[str]
    line: Optional[int]

    def wire(self) -> Dict[str, Any]:
        return {"name": self.name, "coro": self.coro, "file": self.file, "line": self.line}


@dataclass
class LeftoverTimer:
    """A pending ``call_later``/``call_at`` handle (Go: ``LeftoverTimer``)."""

    callback: str
    when_s: float

    def wire(self) -> Dict[str, Any]:
        return {"callback": self.callback, "when_s": self.when_s}


@dataclass
class LeftoverChild:
    """A child process of the harness still alive (Go: ``LeftoverChild``)."""

    pid: int
    cmdline: str
    #: Set by ``settle`` for a child it stopped waiting for: idle (asleep, no CPU used, no child or socket of
    #: its own) through the whole idle window, so nothing the callback must settle is running in it.
    idle: bool = False

    def wire(self) -> Dict[str, Any]:
        return {"pid": self.pid, "cmdline": self.cmdline, "idle": self.idle}


@dataclass
class Leftovers:
    """Work a call left running (Go: ``Leftovers``; also the ``remaining`` of a settle value)."""

    threads: List[LeftoverThread] = field(default_factory=list)
    tasks: List[LeftoverTask] = field(default_factory=list)
    timers: List[LeftoverTimer] = field(default_factory=list)
    children: List[LeftoverChild] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.threads or self.tasks or self.timers or self.children)

    def trim(self, limit: int = LIST_LIMIT) -> int:
        """Cut every list to ``limit`` entries; returns how many were cut."""
        cut = 0
        for items in (self.threads, self.tasks, self.timers, self.children):
            if len(items) > limit:
                cut += len(items) - limit
                del items[limit:]
        return cut

    def wire(self) -> Dict[str, Any]:
        return {"threads": [t.wire() for t in self.threads], "tasks": [t.wire() for t in self.tasks],
                "timers": [t.wire() for t in self.timers], "children": [c.wire() for c in self.children]}


@dataclass
class Observations:
    """Bounded observations waiting for a ``reply`` or ``background`` message (Go: ``Observations``)."""

    logs: List[LogRecord] = field(default_factory=list)
    warnings: List[WarningRecord] = field(default_factory=list)
    audit: List[AuditEvent] = field(default_factory=list)
    leftovers: Leftovers = field(default_factory=Leftovers)
    dropped: int = 0
    connections: List[Connection] = field(default_factory=list)
    sends: List[Send] = field(default_factory=list)
    tls: List[TLSFailure] = field(default_factory=list)
    native: List[NativeClient] = field(default_factory=list)

    def add(self, entry: Any) -> None:
        """Append a log, warning, audit or connection record to its list, or count it as dropped past the
        bound."""
        items = getattr(self, entry.KIND)
        if len(items) >= LIST_LIMIT:
            self.dropped += 1
        else:
            items.append(entry)

    def empty(self) -> bool:
        """No log, warning, audit, connection or send record and nothing dropped (leftovers are not looked at)."""
        return not (self.logs or self.warnings or self.audit or self.dropped or self.connections or self.sends
                    or self.tls or self.native)

    def wire(self) -> Dict[str, Any]:
        """The wire form; ``connections`` and ``sends`` are present only when there are any (older frames
        had none)."""
        out = {"logs": [r.wire() for r in self.logs], "warnings": [r.wire() for r in self.warnings],
               "audit": [r.wire() for r in self.audit], "dropped": self.dropped,
               "leftovers": self.leftovers.wire()}
        if self.connections:
            out["connections"] = [c.wire() for c in self.connections]
        if self.sends:
            out["sends"] = [s.wire() for s in self.sends]
        if self.tls:
            out["tls"] = [t.wire() for t in self.tls]
        if self.native:
            out["native"] = [n.wire() for n in self.native]
        return out


# Result kinds (Go: ``ResultKind``): the ``type`` of a reply value.
KIND_PLAN = "RuntimePreparationPlan"
KIND_MATERIALS = "RuntimeMaterials"
KIND_USER_ACTION_STATE = "SessionUserActionState"
KIND_BOOL = "bool"
KIND_NONE = "none"
KIND_COROUTINE = "coroutine"
KIND_OTHER = "other"
RESULT_KINDS = (KIND_PLAN, KIND_MATERIALS, KIND_USER_ACTION_STATE, KIND_BOOL, KIND_NONE, KIND_COROUTINE, KIND_OTHER)


class _Unset:
    """The value of a Result field its kind does not carry: left off the wire (Go reads it as its zero)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass
class MaterialFile:
    """One RuntimeFile of RuntimeMaterials (Go: ``MaterialFile``); ``None`` for a value of the wrong type."""

    name: Optional[str]
    content_b64: Optional[str]

    def wire(self) -> Dict[str, Any]:
        return {"name": self.name, "content_b64": self.content_b64}


@dataclass
class ActionCommand:
    """One SessionUserActionCommand of a user-action state (Go: ``ActionCommand``)."""

    id: str
    label: str

    def wire(self) -> Dict[str, Any]:
        return {"id": self.id, "label": self.label}


@dataclass
class ResultTypeError:
    """One value of the wrong type in a returned object (Go: ``TypeError``)."""

    field: str
    expected: str
    got: str

    def wire(self) -> Dict[str, Any]:
        return {"field": self.field, "expected": self.expected, "got": self.got}


@dataclass
class Result:
    """The reply value of a callback (Go: ``Result``): a union over ``type`` (one of RESULT_KINDS) of which
    only the fields of that kind are set; the others stay UNSET and are left off the wire."""

    type: str
    repr: Any = UNSET
    was_sync: Any = UNSET
    # RuntimePreparationPlan
    session_bound: Any = UNSET
    declaration: Any = UNSET
    declaration_error: Any = UNSET
    # RuntimeMaterials
    files: Any = UNSET  # List[MaterialFile]
    environment: Any = UNSET
    turn_validity_seconds: Any = UNSET
    # SessionUserActionState
    ready: Any = UNSET
    user_action: Any = UNSET
    actions: Any = UNSET  # List[ActionCommand]
    # bool
    value: Any = UNSET
    # other
    python_type: Any = UNSET
    problems: Any = UNSET  # List[str], only when there are any
    type_errors: Any = UNSET  # List[ResultTypeError], only when there are any

    def __post_init__(self) -> None:
        if self.type not in RESULT_KINDS:
            raise ValueError("result kind %r is not one of %s" % (self.type, ", ".join(RESULT_KINDS)))

    def wire(self) -> Dict[str, Any]:
        # The instance's own attributes, in field order (__init__ sets every field, in order, before anything
        # else can): one pass over a dict instead of a getattr per field, in every reply.
        out: Dict[str, Any] = {}
        for name, v in self.__dict__.items():
            if v is UNSET:
                continue
            if type(v) is list:
                v = [x.wire() if hasattr(x, "wire") else x for x in v]
            out[name] = v
        return out
