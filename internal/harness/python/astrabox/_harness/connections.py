"""Connection tags: which call's code opened each loopback TCP connection, and from which line.

A request sent with ``http.client`` carries ``X-Astrabox-Call`` (see :mod:`~astrabox._harness.observe`); a raw
socket or an asyncio stream writing HTTP by hand carries nothing, so the platform would blame it on whatever
call is in flight on the replica when it lands. The audit hook therefore tags the connection itself: on
``socket.connect`` to a loopback destination (the kit's double and egress proxy listen there; a declared
service's name resolves there), an unbound socket is first bound to an ephemeral port, and a
:class:`~astrabox._harness.records.Connection` record reports the local port, the destination port, the
call in the ``ContextVar`` and the innermost provider frame. Go matches it to the connection its listener
accepted from that port (internal/conntag), after the scenario's messages are all read.
"""

from __future__ import annotations

import ipaddress
import itertools
import socket
import weakref
from typing import Any, Optional, Tuple

_seq = itertools.count(1)
# Sockets already tagged, with their (local port, destination port): a non-blocking socket polled with
# connect_ex fires the audit event on every poll, but it is one connection.
_tagged: "weakref.WeakKeyDictionary[Any, Tuple[int, int]]" = weakref.WeakKeyDictionary()
_loopback_names = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def _loopback(host: Any) -> bool:
    if not isinstance(host, str):
        return False
    if host.lower() in _loopback_names:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def tag(sock: Any, address: Any) -> Optional[Tuple[int, int, int]]:
    """``(seq, local port, destination port)`` for a TCP connect to loopback, binding the socket first when it
    is unbound; ``None`` for any other connect (it is left as it is)."""
    if not isinstance(sock, socket.socket) or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    if sock.type != socket.SOCK_STREAM:
        return None
    if not isinstance(address, tuple) or len(address) < 2 or not isinstance(address[1], int):
        return None
    if not _loopback(address[0]):
        return None
    port = sock.getsockname()[1]
    if port == 0:
        sock.bind(("::", 0) if sock.family == socket.AF_INET6 else ("", 0))
        port = sock.getsockname()[1]
    if _tagged.get(sock) == (port, address[1]):
        return None
    _tagged[sock] = (port, address[1])
    return next(_seq), port, address[1]
