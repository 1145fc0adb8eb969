"""Source locations: which code file is the provider's, and where in it an observation was made.

:class:`CodeKinds` sorts a code file name into ``provider``, ``sdk``, ``stdlib`` or ``other``;
:meth:`CodeKinds.locate` walks a stack to the provider frame that caused an audit event, and
:func:`own_location` to the innermost frame of the provider's own files (a connection's origin);
:func:`code_location` finds the file and first line of a callable (a thread target, an executor job).
"""

from __future__ import annotations

import contextvars
import functools
import os
import sysconfig
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from astrabox._harness.audit import QUIET_EVENTS, QUIET_OPENERS

#: Code file kinds.
PROVIDER = "provider"
SDK = "sdk"
STDLIB = "stdlib"
OTHER = "other"


class Location(NamedTuple):
    """Where an observation was made: a file, a line and a function, each ``None`` when unknown."""

    file: Optional[str]
    line: Optional[int]
    function: Optional[str]


NOWHERE = Location(None, None, None)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep) or (root == os.sep and path.startswith(os.sep))


def _both(paths: List[str]) -> List[str]:
    """Each path as given (without a trailing separator) and resolved, once."""
    out: List[str] = []
    for p in paths:
        for q in (p.rstrip(os.sep) or os.sep, os.path.realpath(p)):
            if q not in out:
                out.append(q)
    return out


#: sysconfig's caches of what it computed from the environment (the user base follows HOME), by name across
#: CPython 3.9 to 3.13.
_SYSCONFIG_CACHES = ("_CONFIG_VARS", "_CONFIG_VARS_INITIALIZED", "_USER_BASE")

_STDLIB_DIRS: Optional[List[str]] = None


def stdlib_dirs() -> List[str]:
    """The standard library's directories, as sysconfig gives them and resolved, computed once per interpreter
    (a fork server computes them once for every replica it forks: it costs milliseconds).

    sysconfig's caches are put back as they were, so that nothing computed here from this process's
    environment reaches a provider that asks sysconfig later: a forked replica computes its own, from its own
    HOME.
    """
    global _STDLIB_DIRS
    if _STDLIB_DIRS is None:
        saved = {name: getattr(sysconfig, name) for name in _SYSCONFIG_CACHES if hasattr(sysconfig, name)}
        try:
            paths = sysconfig.get_paths()
        finally:
            for name, value in saved.items():
                setattr(sysconfig, name, value)
        stdlib = set()
        for key in ("stdlib", "platstdlib"):
            if paths.get(key):
                stdlib.add(paths[key])
        stdlib.add(os.path.dirname(os.__file__))
        _STDLIB_DIRS = sorted({p.rstrip(os.sep) for p in stdlib} | {os.path.realpath(p) for p in stdlib})
    return list(_STDLIB_DIRS)


class CodeKinds:
    """Sorts code file names by who wrote them, with a bounded cache."""

    def __init__(self, sdk_dir: str) -> None:
        self.sdk_dir = os.path.realpath(sdk_dir)
        self._sdk_dirs = {sdk_dir.rstrip(os.sep), self.sdk_dir}
        self.pkg_dirs: List[str] = []
        self.roots: List[str] = []
        self._kinds: Dict[str, str] = {}
        self._stdlib = stdlib_dirs()

    def set_roots(self, pkg_dirs: List[str], roots: List[str]) -> None:
        """Provider code lives under ``pkg_dirs`` (always) and ``roots`` (outside site-packages)."""
        self.pkg_dirs = _both(pkg_dirs)
        self.roots = _both(roots)
        self._kinds = {}

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
            return OTHER
        if filename.startswith("<"):
            return STDLIB if filename.startswith("<frozen") else OTHER
        path = filename if os.path.isabs(filename) else os.path.abspath(filename)
        for d in self.pkg_dirs:
            if _under(path, d):
                return PROVIDER
        for d in self._sdk_dirs:
            if _under(path, d):
                return SDK
        in_site = (os.sep + "site-packages" + os.sep) in path or (os.sep + "dist-packages" + os.sep) in path
        in_stdlib = not in_site and any(_under(path, d) for d in self._stdlib)
        if in_stdlib:
            return STDLIB
        if not in_site:
            for d in self.roots:
                if _under(path, d):
                    return PROVIDER
        return OTHER

    def is_provider_file(self, filename: str) -> bool:
        return self.kind(filename) == PROVIDER

    def locate(self, event: str, frame: Any) -> Optional[Location]:
        """Where the code that fired ``event`` from ``frame`` sits: the innermost provider frame, else the
        innermost frame of other (third-party) code, else :data:`NOWHERE`. ``None`` when the event is the
        import system's or a source lookup's own file access, which is not provider I/O."""
        provider = None
        fallback = None
        in_prefix = True
        f = frame
        while f is not None:
            k = self.kind(f.f_code.co_filename)
            if in_prefix:
                if k == STDLIB:
                    if event in QUIET_EVENTS and f.f_globals.get("__name__") in QUIET_OPENERS:
                        return None
                else:
                    in_prefix = False
            if k == PROVIDER:
                provider = f
                break
            if fallback is None and k == OTHER:
                fallback = f
            f = f.f_back
        where = provider or fallback
        if where is None:
            return NOWHERE
        return Location(where.f_code.co_filename, where.f_lineno, where.f_code.co_name)


def own_location(kinds: CodeKinds, frame: Any) -> Location:
    """The innermost frame of the provider's own files on the stack from ``frame``, else :data:`NOWHERE`."""
    f = frame
    while f is not None:
        if kinds.kind(f.f_code.co_filename) == PROVIDER:
            return Location(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return NOWHERE


def code_location(fn: Any) -> Tuple[Optional[str], Optional[int]]:
    """The file and first line of a callable's code (through partials, bound methods and wrappers)."""
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


def unwrap_job(fn: Any, args: Tuple[Any, ...]) -> Any:
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
