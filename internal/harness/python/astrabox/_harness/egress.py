"""Routing of the provider's connections to its declared services, for clients that ignore ``HTTP(S)_PROXY``.

urllib, requests and httpx read the proxy variables the kit sets and reach the kit's egress proxy on their
own. ``http.client``, asyncio streams and raw sockets resolve and connect by themselves; for them this module
(installed in every replica when the kit declares services, see docs/services.md) makes name resolution of a
declared ``host:port`` answer with the loopback address of that host's direct listener on the proxy, where
TLS is terminated with the run's certificate authority exactly as for a proxied client. A connection to any
other non-loopback destination is refused under the default policy: the refusal is reported to the proxy
over a connection of its own, which the harness tags like any other (see :mod:`connections`), so the kit
records it against the call whose code tried and at the provider's line; the client sees
``socket.gaierror`` or ``ConnectionRefusedError``, as it would for an unreachable host.

Requests sent this way to a declared service carry the same ``X-Astrabox-Call`` tag as requests to the
deployment double, so work a finished callback left running is attributed to that callback.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from typing import Any, Dict, Optional, Tuple

ROUTES_ENV = "ASTRABOX_EGRESS_ROUTES"
PROXY_ENV = "ASTRABOX_EGRESS_PROXY"
POLICY_ENV = "ASTRABOX_EGRESS_POLICY"

_installed = False


def _split(addr: str) -> Optional[Tuple[str, int]]:
    host, _, port = addr.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return None


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
        return True
    except ValueError:
        return False


def _port(port: Any) -> Optional[int]:
    if isinstance(port, int):
        return port
    if isinstance(port, (str, bytes)):
        text = port.decode() if isinstance(port, bytes) else port
        if text.isdigit():
            return int(text)
        try:
            return socket.getservbyname(text)
        except OSError:
            return None
    return None


class Router:
    """Answers name resolution and connections for declared hosts and refuses the rest."""

    def __init__(self, routes: Dict[str, str], proxy: Optional[Tuple[str, int]], refuse: bool) -> None:
        self.routes: Dict[Tuple[str, int], Tuple[str, int]] = {}
        for key, target in routes.items():
            k, t = _split(key.lower()), _split(target)
            if k and t:
                self.routes[k] = t
        self.proxy = proxy
        self.refuse = refuse
        self.declared_names = {host for host, _ in self.routes}
        # Each route's own loopback alias (127.77.x.y), the address a lookup of its host answers: a client
        # that keeps only the address of a lookup and connects to the port it meant (anyio, so httpx's async
        # client with a transport of its own) still reaches the route's listener, since a connect to an alias
        # goes to its route whatever the port.
        self.alias_of: Dict[Tuple[str, int], str] = {}
        self.aliases: Dict[str, Tuple[str, int]] = {}
        for i, key in enumerate(sorted(self.routes), start=1):
            alias = "127.77.%d.%d" % (i // 250, i % 250 + 1)
            self.alias_of[key] = alias
            self.aliases[alias] = self.routes[key]

    def route(self, host: str, port: Optional[int]) -> Optional[Tuple[str, int]]:
        if isinstance(host, str) and host in self.aliases:
            return self.aliases[host]
        if port is None:
            return None
        return self.routes.get((host.lower(), port))

    def refused(self, host: str, port: Optional[int]) -> bool:
        if not self.refuse or _is_loopback(host):
            return False
        if port is not None and self.route(host, port):
            return False
        return True

    def report(self, host: str, port: Optional[int]) -> None:
        """Tell the proxy that the provider tried to reach an undeclared destination (best effort)."""
        if self.proxy is None:
            return
        target = "%s:%s" % (host if ":" not in host else "[%s]" % host, port if port is not None else 0)
        try:
            with _original_create_connection(self.proxy, timeout=2) as conn:
                conn.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
                conn.recv(512)
        except OSError:
            pass


_router: Optional[Router] = None
_original_getaddrinfo = socket.getaddrinfo
_original_create_connection = socket.create_connection
_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    router = _router
    if router is None or not isinstance(host, (str, bytes)):
        return _original_getaddrinfo(host, port, *args, **kwargs)
    name = host.decode() if isinstance(host, bytes) else host
    number = _port(port)
    target = router.route(name, number)
    if target is not None:
        infos = _original_getaddrinfo(target[0], target[1], *args, **kwargs)
        alias = router.alias_of.get((name.lower(), number)) if number is not None else None
        if alias is None:
            return infos
        # The route's alias in place of the listener's address: a connect to it is routed (see Router).
        return [(fam, typ, proto, canon, (alias, target[1]) + tuple(sa[2:]) if fam == socket.AF_INET else sa)
                for fam, typ, proto, canon, sa in infos]
    if router.refused(name, number):
        router.report(name, number)
        raise socket.gaierror(socket.EAI_NONAME, "astrabox: %s is not a declared service (egress refused)" % name)
    return _original_getaddrinfo(host, port, *args, **kwargs)


def _checked(sock: socket.socket, address: Any) -> Any:
    router = _router
    if router is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return address
    if not isinstance(address, tuple) or len(address) < 2 or not isinstance(address[0], str):
        return address
    host, port = address[0], _port(address[1])
    target = router.route(host, port)
    if target is not None:
        return (target[0], target[1]) + tuple(address[2:])
    if router.refused(host, port):
        router.report(host, port)
        raise ConnectionRefusedError("astrabox: %s:%s is not a declared service (egress refused)" % (host, port))
    if not _is_address(host):
        # A name: resolve it through the router so that declared names are routed and others refused.
        infos = _getaddrinfo(host, port, sock.family, sock.type)
        return infos[0][4]
    return address


def _connect(self: socket.socket, address: Any) -> None:
    return _original_connect(self, _checked(self, address))


def _connect_ex(self: socket.socket, address: Any) -> int:
    try:
        address = _checked(self, address)
    except ConnectionRefusedError:
        import errno

        return errno.ECONNREFUSED
    return _original_connect_ex(self, address)


def _tag_declared(current_call: Any, work_tag: Any = None) -> None:
    """Add X-Astrabox-Call (and X-Astrabox-Work, from ``work_tag``) to http.client requests bound for a
    declared service, directly or tunnelled."""
    import http.client

    original = http.client.HTTPConnection.putrequest
    pid = os.getpid()
    router = _router

    def putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> None:
        original(conn, method, url, *args, **kwargs)
        try:
            call = current_call.get()
            if call is None or router is None:
                return
            host = (getattr(conn, "_tunnel_host", None) or conn.host or "").lower()
            if host in router.declared_names:
                conn.putheader("X-Astrabox-Call", "%d:%d" % (pid, call))
                work = work_tag() if work_tag is not None else None
                if work is not None:
                    conn.putheader("X-Astrabox-Work", work)
        except Exception:  # noqa: BLE001 - never break the provider's request
            pass

    http.client.HTTPConnection.putrequest = putrequest  # type: ignore[method-assign]


def declared(host: str) -> bool:
    """Whether ``host`` (a name or an address) is a declared service's host."""
    router = _router
    return router is not None and isinstance(host, str) and host.lower() in router.declared_names


def install(current_call: Any = None, work_tag: Any = None) -> bool:
    """Install the router when the kit declared services (idempotent). Returns whether it is installed."""
    global _installed, _router
    if _installed:
        return True
    raw = os.environ.get(ROUTES_ENV)
    if raw is None:
        return False
    try:
        routes = json.loads(raw)
    except ValueError:
        routes = {}
    if not isinstance(routes, dict):
        routes = {}
    proxy = _split(os.environ.get(PROXY_ENV, ""))
    _router = Router({str(k): str(v) for k, v in routes.items()}, proxy, os.environ.get(POLICY_ENV, "refuse") != "allow")
    socket.getaddrinfo = _getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
    if current_call is not None:
        _tag_declared(current_call, work_tag)
    _installed = True
    return True
