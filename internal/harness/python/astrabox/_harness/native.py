"""Clients below Python's sockets: modules that resolve names or open connections in C.

The harness sees a lookup or a connection made through Python's ``socket`` module (the egress router, the
audit hook, the send meter). A client whose network code is C does neither: grpcio's core resolves and
connects by itself, c-ares (``pycares``, used by ``aiodns`` and aiohttp's ``AsyncResolver``) sends its own
DNS queries, libcurl (``pycurl``) and libpq (``psycopg2``) open their own sockets. The kit can still hold some
of them (grpc and libcurl honour the proxy variables it sets, so an undeclared destination reaches the
egress proxy and is refused there), but it cannot tell their lookups and connections apart by call, and a
C resolver asks the system's DNS servers directly. So the run says which one was loaded: after each call
the harness looks for these modules in ``sys.modules`` and records each new one once per process as a
:class:`NativeClient`, on the callback in flight (the first callback for a module imported with the provider).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Set, Tuple

from astrabox._harness.records import NativeClient

#: Modules whose network code is C, and the library to name: the module the library's C part lives in.
MODULES: Dict[str, str] = {
    "grpc._cython.cygrpc": "grpcio",
    "pycares._cares": "pycares (c-ares)",
    "pycurl": "pycurl (libcurl)",
    "psycopg2._psycopg": "psycopg2 (libpq)",
    "MySQLdb._mysql": "mysqlclient (libmysqlclient)",
    "_ldap": "python-ldap (libldap)",
}

#: For modules that are loaded without being used (aiohttp imports aiodns, and so pycares, whenever it is
#: installed; ``import grpc`` loads the core), the classes whose instances mean use: a module is reported
#: when one exists at the scan that finds it loaded, or when one is made later.
USED_BY: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "pycares._cares": (("pycares", "Channel"),),
    "grpc._cython.cygrpc": (("grpc._channel", "Channel"), ("grpc.aio._channel", "Channel")),
}

_seen: Set[str] = set()
_hooked: Set[str] = set()


def _exists(cls: Any) -> bool:
    """Whether an instance of ``cls`` is alive (one heap walk, once per module and process)."""
    import gc

    try:
        return any(type(o) is cls or isinstance(o, cls) for o in gc.get_referrers(cls))
    except Exception:  # noqa: BLE001
        return False


def _hook(cls: Any, name: str, library: str, emit: Callable[[Any], None]) -> None:
    """Report ``name`` the first time an instance of ``cls`` is made (in the context of the code making it)."""
    original = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if name not in _seen:
            _seen.add(name)
            emit(NativeClient(module=name, library=library))
        original(self, *args, **kwargs)

    try:
        cls.__init__ = __init__
    except (AttributeError, TypeError):
        pass


def scan(record: Callable[[Any], None], emit: Callable[[Any], None]) -> None:
    """Record every module of :data:`MODULES` loaded (and, for those of :data:`USED_BY`, used) since the last
    scan; ``record`` is called inside the observer's guard, ``emit`` from the provider's own code."""
    modules = sys.modules
    for name, library in MODULES.items():
        if name in _seen or name not in modules:
            continue
        uses = USED_BY.get(name)
        if not uses:
            _seen.add(name)
            record(NativeClient(module=name, library=library))
            continue
        if name in _hooked:
            continue
        _hooked.add(name)
        used = False
        for module, attr in uses:
            if module not in modules:
                # grpc imports its channel module on the first channel: import it now, to hook it first.
                try:
                    import importlib

                    importlib.import_module(module)
                except Exception:  # noqa: BLE001 - a version without it has nothing to hook there
                    continue
            cls = getattr(modules.get(module), attr, None)
            if isinstance(cls, type):
                _hook(cls, name, library, emit)
                used = used or _exists(cls)
        if used and name not in _seen:
            _seen.add(name)
            record(NativeClient(module=name, library=library))
