"""Clients below Python's sockets: modules that resolve names or open connections in C.

The harness sees a lookup or a connection made through Python's ``socket`` module (the egress router, the
audit hook, the send meter). A client whose network code is C does neither: grpcio's core resolves and
connects by itself, c-ares (``pycares``, used by ``aiodns`` and aiohttp's ``AsyncResolver``) sends its own
DNS queries, libcurl (``pycurl``) and libpq (``psycopg2``) open their own sockets. The kit can still hold some
of them (grpc and libcurl honour the proxy variables it sets, so an undeclared destination reaches the
egress proxy and is refused there), but it cannot tell their lookups and connections apart by call, and a
C resolver asks the system's DNS servers directly. So the run says which one was loaded: after each call
the harness looks for these modules in ``sys.modules`` and records each new one once per process as a
:class:`NativeClient`, on the call in flight (its ``load`` for a module imported at import time).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Set

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

_seen: Set[str] = set()


def scan(record: Callable[[Any], None]) -> None:
    """Record every module of :data:`MODULES` loaded since the last scan (cheap: a few dict lookups)."""
    modules = sys.modules
    for name, library in MODULES.items():
        if name not in _seen and name in modules:
            _seen.add(name)
            record(NativeClient(module=name, library=library))
