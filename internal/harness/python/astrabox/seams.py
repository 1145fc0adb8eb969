"""The runtime preparation seam: the types a provider implements and receives.

This module pins the Python surface described in ``spec/seams-api.md``. All dataclasses are frozen, all
sequences are tuples and every callback is keyword-only. Material bytes, environment values, trusted
configuration and workload tokens never appear in ``repr()`` or ``str()`` of these objects.

Standard library only; runs on CPython 3.9 and later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

__all__ = [
    "AgentPreparationContext",
    "AgentPreparationOperation",
    "PackageCheckout",
    "PreparationUserActionRequired",
    "RuntimeFile",
    "RuntimeMaterials",
    "RuntimePreparationPlan",
    "RuntimePreparationProvider",
    "SandboxHandle",
    "SessionPreparationContext",
    "SessionUserActionCommand",
    "SessionUserActionContext",
    "SessionUserActionState",
    "TurnPreparationContext",
    "WorkloadIdentity",
    "USER_ACTION_STATUSES",
    "is_safe_file_name",
    "is_valid_provider_name",
    "validate_user_action",
]

_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_PROVIDER_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")

#: The statuses a user action may carry.
USER_ACTION_STATUSES = ("pending", "unknown", "failed", "expired")


def is_safe_file_name(name: object) -> bool:
    """Return True when ``name`` is a safe material file basename.

    A safe name matches ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`` and does not contain ``..``.
    """
    return isinstance(name, str) and _SAFE_FILE_NAME.fullmatch(name) is not None and ".." not in name


def is_valid_provider_name(name: object) -> bool:
    """Return True when ``name`` is a valid provider name: ``[a-z0-9][a-z0-9._-]{0,62}``."""
    return isinstance(name, str) and _PROVIDER_NAME.fullmatch(name) is not None


def validate_user_action(message: object, url: object, status: object) -> List[str]:
    """Check a user action the way the host does and return the problems found (empty when valid).

    The host accepts a user action only when ``message`` is 1 to 1,000 printable characters, ``status`` is
    one of :data:`USER_ACTION_STATUSES`, and ``url``, when present, is an absolute ``http`` or ``https`` URL
    of at most 2,048 characters without user information. Problems never quote the message or the URL.
    """
    problems: List[str] = []
    if not isinstance(message, str):
        problems.append("message must be a str, not %s" % type(message).__name__)
    elif not message:
        problems.append("message is empty; it must be 1 to 1000 printable characters")
    else:
        if len(message) > 1000:
            problems.append("message is %d characters; at most 1000 are allowed" % len(message))
        bad = [ch for ch in message if not ch.isprintable()]
        if bad:
            problems.append(
                "message contains %d non-printable character(s) (first: U+%04X)" % (len(bad), ord(bad[0]))
            )
    if not isinstance(status, str) or status not in USER_ACTION_STATUSES:
        shown = status if isinstance(status, str) and len(status) <= 40 else type(status).__name__
        problems.append("status %r is not one of %s" % (shown, ", ".join(USER_ACTION_STATUSES)))
    if url is not None:
        if not isinstance(url, str):
            problems.append("url must be a str or None, not %s" % type(url).__name__)
        else:
            if len(url) > 2048:
                problems.append("url is %d characters; at most 2048 are allowed" % len(url))
            try:
                parts = urlsplit(url)
                hostname = parts.hostname
            except ValueError:
                problems.append("url cannot be parsed")
            else:
                if parts.scheme not in ("http", "https"):
                    problems.append("url must be an absolute http or https URL")
                elif not hostname:
                    problems.append("url has no host")
                if "@" in parts.netloc:
                    problems.append("url carries user information (user:pass@); remove it")
                if any(ch.isspace() or not ch.isprintable() for ch in url):
                    problems.append("url contains whitespace or non-printable characters")
    return problems


def _as_tuple(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if isinstance(value, list):
        object.__setattr__(obj, name, tuple(value))


# ---------------------------------------------------------------------------------------------------------
# Plan


@dataclass(frozen=True)
class RuntimePreparationPlan:
    """What ``plan`` returns: whether Sessions must exist before the engine initializes, and a declaration.

    ``declaration`` must be JSON-serialisable; with the provider name it enters the runtime generation.
    """

    session_bound: bool = False
    declaration: Mapping[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# Materials


def _redacted_size(content: object) -> str:
    try:
        if isinstance(content, (bytes, bytearray)):
            return "<redacted %d bytes>" % len(content)
        if isinstance(content, memoryview):
            return "<redacted %d bytes>" % content.nbytes
    except Exception:  # pragma: no cover - defensive
        pass
    return "<redacted>"


@dataclass(frozen=True)
class RuntimeFile:
    """One material file. ``name`` is a safe basename; ``content`` never appears in repr, str or errors."""

    name: str
    content: bytes = field(repr=False)

    def __repr__(self) -> str:
        return "RuntimeFile(name=%r, content=%s)" % (self.name, _redacted_size(self.content))

    __str__ = __repr__


class _Redacted:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<redacted>"


_REDACTED = _Redacted()


@dataclass(frozen=True)
class RuntimeMaterials:
    """Files and environment for a Session or a turn.

    ``repr()`` shows file names and environment names only, never bytes or values.
    ``turn_validity_seconds`` is meaningful only from ``prepare_turn``; it must be > 0 and finite.
    """

    files: Tuple[RuntimeFile, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    turn_validity_seconds: Optional[float] = None

    def __post_init__(self) -> None:
        _as_tuple(self, "files")

    def __repr__(self) -> str:
        files = self.files
        if isinstance(files, tuple):
            shown_files = "(" + ", ".join(repr(f) for f in files) + ("," if len(files) == 1 else "") + ")"
        else:
            shown_files = "<%s>" % type(files).__name__
        env = self.environment
        try:
            shown_env = "{" + ", ".join("%r: <redacted>" % (k,) for k in env) + "}"
        except Exception:
            shown_env = "<%s>" % type(env).__name__
        text = "RuntimeMaterials(files=%s, environment=%s" % (shown_files, shown_env)
        if self.turn_validity_seconds is not None:
            text += ", turn_validity_seconds=%r" % (self.turn_validity_seconds,)
        return text + ")"

    __str__ = __repr__


# ---------------------------------------------------------------------------------------------------------
# Sandbox handle


class SandboxHandle:
    """A sandbox's file interface. Supplied by the host; providers never construct one.

    Paths are absolute paths inside the sandbox. Every method raises the builtin ``OSError`` subclass
    the sandbox reports (``FileNotFoundError``, ``PermissionError``, ...).
    """

    sandbox_id: str
    home: str
    workspace: str

    def __init__(self, sandbox_id: str = "", home: str = "", workspace: str = "") -> None:
        self.sandbox_id = sandbox_id
        self.home = home
        self.workspace = workspace

    def __repr__(self) -> str:
        return "%s(sandbox_id=%r, home=%r, workspace=%r)" % (
            type(self).__name__,
            getattr(self, "sandbox_id", None),
            getattr(self, "home", None),
            getattr(self, "workspace", None),
        )

    async def read_file(self, path: str) -> bytes:
        """Return the bytes of the file at ``path``."""
        raise NotImplementedError("SandboxHandle.read_file is supplied by the host")

    async def write_file(self, path: str, content: bytes, *, mode: int = 0o600) -> None:
        """Write ``content`` to ``path`` with permission bits ``mode``."""
        raise NotImplementedError("SandboxHandle.write_file is supplied by the host")

    async def exists(self, path: str) -> bool:
        """Return True when ``path`` exists."""
        raise NotImplementedError("SandboxHandle.exists is supplied by the host")

    async def list_dir(self, path: str) -> Tuple[str, ...]:
        """Return the names in the directory ``path``."""
        raise NotImplementedError("SandboxHandle.list_dir is supplied by the host")

    async def remove(self, path: str) -> None:
        """Remove the file at ``path``."""
        raise NotImplementedError("SandboxHandle.remove is supplied by the host")


# ---------------------------------------------------------------------------------------------------------
# Contexts


@dataclass(frozen=True)
class AgentPreparationOperation:
    """One synchronize invocation: the Agent, a durable operation identity and a host-clock deadline."""

    agent_id: str
    operation_id: str
    deadline: float


@dataclass(frozen=True)
class PackageCheckout:
    """A package as declared (``source``) and where its cache checkout is inside the sandbox (``path``)."""

    source: Mapping[str, Any] = field(hash=False)
    path: str


@dataclass(frozen=True)
class AgentPreparationContext:
    """What ``synchronize`` receives. ``config`` is trusted and never shown in repr."""

    operation: AgentPreparationOperation
    creator_user_id: str
    config_version: int
    preparation_id: str
    runtime_generation: str
    config: Mapping[str, Any] = field(repr=False, hash=False)
    sandbox: SandboxHandle
    packages: Tuple[PackageCheckout, ...]
    skills_path: Optional[str]

    def __post_init__(self) -> None:
        _as_tuple(self, "packages")


@dataclass(frozen=True)
class WorkloadIdentity:
    """The Session workload's identity. ``token`` is never shown in repr."""

    subject: str
    token: str = field(repr=False)


def _file_path(ctx: object, name: str) -> str:
    if not is_safe_file_name(name):
        raise ValueError(
            "file_path: %r is not a safe file name (use a basename matching "
            "[A-Za-z0-9][A-Za-z0-9._-]{0,127} without '..')" % (name if isinstance(name, str) else type(name))
        )
    base = getattr(ctx, "_file_paths_dir", "")
    if not base:
        raise RuntimeError("file_path: this context carries no file directory; the platform supplies it")
    return base.rstrip("/") + "/" + name


@dataclass(frozen=True)
class SessionPreparationContext:
    """What ``prepare_session`` receives. ``config`` and the workload token never appear in repr."""

    session_id: str
    agent_id: str
    principal_id: str
    config: Mapping[str, Any] = field(repr=False, hash=False)
    runtime_generation: str
    sandbox_id: str
    workload_identity: WorkloadIdentity
    trigger: str
    _file_paths_dir: str = field(default="", repr=False, compare=False)

    def file_path(self, name: str) -> str:
        """Where the platform will write ``RuntimeFile(name)``; stable per Session and sandbox."""
        return _file_path(self, name)


@dataclass(frozen=True)
class TurnPreparationContext:
    """What ``prepare_turn`` receives."""

    session_id: str
    agent_id: str
    principal_id: str
    dispatch_attempt_id: str
    runtime_generation: str
    sandbox_handle: SandboxHandle
    deadline: float
    refresh: bool
    _file_paths_dir: str = field(default="", repr=False, compare=False)

    def file_path(self, name: str) -> str:
        """The same path ``prepare_session``'s context gave for ``name``."""
        return _file_path(self, name)


@dataclass(frozen=True)
class SessionUserActionContext:
    """What ``read_user_actions`` and ``perform_user_action`` receive."""

    session_id: str
    owner_id: str
    agent_id: str


# ---------------------------------------------------------------------------------------------------------
# User actions


def _rebuild_user_action(message: Any, url: Any, status: Any) -> "PreparationUserActionRequired":
    return PreparationUserActionRequired(message=message, url=url, status=status)


class PreparationUserActionRequired(Exception):
    """Raised from ``prepare_session`` or ``prepare_turn`` when the user must act first.

    ``str(exc)`` is the message; ``status`` is one of ``pending``, ``unknown``, ``failed``, ``expired``.
    """

    def __init__(self, *, message: str, url: Optional[str] = None, status: str = "pending") -> None:
        super().__init__(message)
        self.message = message
        self.url = url
        self.status = status

    def __str__(self) -> str:
        return str(self.message)

    def __repr__(self) -> str:
        return "%s(message=%r, url=%r, status=%r)" % (type(self).__name__, self.message, self.url, self.status)

    def __reduce__(self):  # keyword-only __init__ needs help to pickle
        return (_rebuild_user_action, (self.message, self.url, self.status))


@dataclass(frozen=True)
class SessionUserActionCommand:
    """An operation the owner may choose: ``id`` is passed back to ``perform_user_action``."""

    id: str
    label: str


@dataclass(frozen=True)
class SessionUserActionState:
    """The Session's prerequisites. ``ready=False`` carries a ``user_action``; action ids are unique."""

    ready: bool
    user_action: Optional[Mapping[str, Any]] = None
    actions: Tuple[SessionUserActionCommand, ...] = ()

    def __post_init__(self) -> None:
        _as_tuple(self, "actions")


# ---------------------------------------------------------------------------------------------------------
# Provider


class RuntimePreparationProvider:
    """Base class of a deployment's runtime preparation provider.

    Subclass it, set a class attribute ``name`` (non-empty, ``[a-z0-9][a-z0-9._-]{0,62}``) and override
    only the callbacks you need. The platform instantiates the class once per process with no arguments.
    """

    name: ClassVar[str] = ""

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        """Synchronous, no I/O. The default is not session-bound and declares nothing."""
        return RuntimePreparationPlan()

    async def synchronize(self, *, context: AgentPreparationContext) -> None:
        """Synchronize Agent resources for one prepared box. The default does nothing."""
        return None

    async def recover(self, *, operation: AgentPreparationOperation) -> bool:
        """Return True only once ``operation`` can never write again. The default returns False."""
        return False

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        """Return Session materials. The default returns none."""
        return RuntimeMaterials()

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        """Return refreshed files before an engine write. The default returns none."""
        return RuntimeMaterials()

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        """Return the Session's prerequisites. The default is ready."""
        return SessionUserActionState(ready=True)

    async def perform_user_action(
        self, *, context: SessionUserActionContext, action_id: str
    ) -> SessionUserActionState:
        """Run an operation the state offered. The default offers none, so this raises."""
        raise NotImplementedError("this provider offers no user actions")
