"""Per-send attribution on tagged loopback connections: which call's code wrote each run of bytes.

A connection the provider keeps open across callbacks (a raw socket, an asyncio stream, either wrapped in
TLS) carries requests of several calls, and a request written by hand carries no call header. The harness
therefore meters every loopback connection it tags (see :mod:`connections`): it counts the plaintext bytes
the provider's code writes on it and reports them in runs, each a :class:`~astrabox._harness.records.Send`:
the connection, the offsets of the run's first byte and past its last, and (by routing) the call in the
``ContextVar`` of the code that wrote it, with the unit of its work (see :mod:`units`). A write by the same
unit extends the current run while its record waits to be sent; after that, or when another unit writes, a
new run begins. So bytes whose record never
reached Go (a process killed mid-call) are in no run, rather than in an earlier call's. Go's listeners count
the same plaintext stream and note where each request starts (internal/conntag); a request is the call's
whose run holds its first byte.

Only tagged sockets pay: at tagging the socket's class is swapped for a subclass whose ``send``, ``sendall``
and ``sendmsg`` count (``socket.socket`` has ``__slots__``, so nothing can be set on one socket alone). The
plaintext is counted where the provider hands it over, never where ciphertext leaves:

- ``ssl.SSLSocket`` made from a tagged socket (``SSLContext.wrap_socket``) takes over the socket's meter and
  counts ``send``/``write`` (its ``sendall`` calls ``send``); OpenSSL writes the ciphertext to the descriptor
  itself;
- an asyncio selector transport made for a tagged socket counts ``write`` (and ``writelines`` where the
  class has its own, 3.12+, which fills the buffer and calls ``sock.sendmsg`` without ``write``), and its
  socket stops counting: the transport sends buffered data later, from the loop, in whichever context
  happened to arm the writer, while ``write`` runs in the writer's own;
- an asyncio TLS transport (``_SSLProtocolTransport``, from ``create_connection(ssl=...)`` or
  ``start_tls``) counts the application data given to ``write``/``writelines``; the transport below it,
  which carries the ciphertext, stops counting;
- an ``ssl.SSLObject`` over memory BIOs (anyio's ``TLSStream``, so httpcore's async TLS and every anyio
  client; trio; any hand-rolled TLS layer) is not tied to its socket by any API: the library reads the
  ciphertext out of the object's outgoing BIO and writes it on a stream of its own. The object is therefore
  linked to the metered socket or transport on which the unit that made it (the same thread, the same
  asyncio task) next writes a TLS ClientHello: that write, and every later one below the object, is
  ciphertext and stops counting, and the object's ``write`` counts the plaintext instead. A client object
  made by asyncio's own TLS transport is never linked (its transport counts above it).

A ``sendall`` that raised may have sent part of its data: the meter then reports the offset lost, and
requests from there on fall back to the call that opened the connection or the call in flight.
"""

from __future__ import annotations

import socket
import threading
import weakref
from typing import Any, Callable, Dict, Optional

from astrabox._harness.records import Send
from astrabox._harness.routing import CURRENT_CALL

_UNSET = object()

#: Who is writing now: the unit of a call's work (see :mod:`~astrabox._harness.units`), so that a run holds
#: one unit's bytes; set by the observer. By default only the call, from the ``ContextVar``.
who: Callable[[], Any] = CURRENT_CALL.get
#: Reports a new run (or a loss) as a :class:`Send` record, which routing tags with its call; set by the
#: observer. The record's ``end`` keeps growing while the same unit writes on, until it is sent.
emit: Optional[Callable[[Send], None]] = None

# The meter of each metered socket or transport, by id(): a plain dict lookup on every send, where a
# WeakKeyDictionary would make a weak reference each time. A finalizer drops the entry when the object goes,
# before its id can be reused.
_meters: Dict[int, "Meter"] = {}


def _get(obj: Any) -> "Optional[Meter]":
    return _meters.get(id(obj))


def _set(obj: Any, meter: "Meter") -> None:
    key = id(obj)
    if key not in _meters:
        weakref.finalize(obj, _meters.pop, key, None)
    _meters[key] = meter
# Metered subclass -> the class it was made from, and back.
_plain_of: Dict[type, type] = {}
_metered_of: Dict[type, type] = {}
_classes_lock = threading.Lock()
_installed = False

# Client ``SSLObject``s not yet linked to a connection, by the unit that made them (thread, asyncio task):
# the newest one per unit, held weakly. Looked at only when not empty, on a metered write.
_pending_tls: Dict[Any, "weakref.ref[Any]"] = {}
_PENDING_MAX = 256


def _unit_key() -> Any:
    """The thread and asyncio task running now (the task is ``None`` outside one)."""
    import asyncio

    loop = asyncio._get_running_loop()
    task = asyncio.current_task(loop) if loop is not None else None
    return (threading.get_ident(), id(task) if task is not None else None)


def _client_hello(data: Any) -> bool:
    """Whether ``data`` starts with a TLS handshake record holding a ClientHello."""
    try:
        head = bytes(memoryview(data)[:6])
    except TypeError:
        return False
    return len(head) == 6 and head[0] == 0x16 and head[1] == 0x03 and head[5] == 0x01


def _link_tls(below: Any, data: Any) -> bool:
    """Link the pending ``SSLObject`` of the unit writing ``data`` on ``below`` when ``data`` is its
    ClientHello: ``below`` stops counting and the object counts its plaintext. True when linked (``data``
    is ciphertext, not to be counted)."""
    key = _unit_key()
    ref = _pending_tls.get(key)
    if ref is None or not _client_hello(data):
        return False
    del _pending_tls[key]
    obj = ref()
    if obj is None:
        return False
    _adopt(obj, _take(below))
    return True


def _forget_tls(obj: Any) -> None:
    """``obj`` is asyncio's own TLS object, counted above it: never link it."""
    for key, ref in list(_pending_tls.items()):
        if ref() is obj:
            _pending_tls.pop(key, None)


class Meter:
    """The plaintext bytes written so far on one connection, and the run of bytes being written now."""

    __slots__ = ("seq", "offset", "last", "lost", "lock", "run")

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.offset = 0
        self.last: Any = _UNSET
        self.lost = False
        self.lock = threading.Lock()
        self.run: Optional[Send] = None

    def count(self, n: int) -> None:
        """``n`` bytes were written by the code running now: they extend the current run when the same
        call wrote it and its record has not been sent yet, else they start a new run (a new record)."""
        if n <= 0:
            return
        call = who()
        lock = self.lock
        lock.acquire()  # not ``with``: twice as dear, and nothing between can raise
        if self.lost:
            lock.release()
            return
        start = self.offset
        self.offset = end = start + n
        run = self.run
        if run is not None and not run.sealed and (call is self.last or call == self.last):
            run.end = end
            lock.release()
            return
        self.last = call
        run = self.run = Send(self.seq, start, end)
        run.lock = lock
        lock.release()
        if emit is not None:
            emit(run)

    def lose(self) -> None:
        """A write failed part-way: offsets from here on are unknown."""
        with self.lock:
            if self.lost:
                return
            self.lost = True
            run = self.run = Send(self.seq, self.offset, self.offset, lost=True)
        if emit is not None:
            emit(run)


def _nbytes(data: Any) -> int:
    try:
        return memoryview(data).nbytes
    except TypeError:
        return 0


def _size(data: Any) -> int:
    """The bytes in a buffer handed to a write (``len`` for the usual bytes and bytearray)."""
    cls = type(data)
    return len(data) if cls is bytes or cls is bytearray else _nbytes(data)


def _lose(obj: Any) -> None:
    meter = _meters.get(id(obj))
    if meter is not None:
        meter.lose()


# The counting methods of a metered class are made for the class they extend, calling its own methods
# directly (no ``super()``, no helper frames: this is what every write on a tagged socket pays).


def _socket_methods(cls: type) -> Dict[str, Any]:
    """``send``/``sendall``/``sendmsg`` of a plain tagged socket, counted."""
    base_send, base_sendall, base_sendmsg, get = cls.send, cls.sendall, cls.sendmsg, _meters.get  # type: ignore[attr-defined]

    def send(self: Any, data: Any, flags: int = 0) -> int:
        if _pending_tls and _link_tls(self, data):
            return base_send(self, data, flags)
        n = base_send(self, data, flags)
        meter = get(id(self))
        if meter is not None:
            meter.count(n)
        return n

    def sendall(self: Any, data: Any, flags: int = 0) -> None:
        if _pending_tls and _link_tls(self, data):
            return base_sendall(self, data, flags)
        try:
            base_sendall(self, data, flags)
        except BaseException:
            _lose(self)
            raise
        meter = get(id(self))
        if meter is not None:
            meter.count(_size(data))

    def sendmsg(self: Any, buffers: Any, *args: Any) -> int:
        n = base_sendmsg(self, buffers, *args)
        meter = get(id(self))
        if meter is not None:
            meter.count(n)
        return n

    return {"send": send, "sendall": sendall, "sendmsg": sendmsg}


def _ssl_methods(cls: type) -> Dict[str, Any]:
    """The plaintext ``send``/``write`` of an ``ssl.SSLSocket``, counted (its ``sendall`` calls ``send``,
    except on a socket not yet wrapped, which writes in clear and is counted here)."""
    base_send, base_write, base_sendall, get = cls.send, cls.write, cls.sendall, _meters.get  # type: ignore[attr-defined]

    def send(self: Any, data: Any, flags: int = 0) -> int:
        n = base_send(self, data, flags)
        meter = get(id(self))
        if meter is not None:
            meter.count(n)
        return n

    def write(self: Any, data: Any) -> int:
        n = base_write(self, data)
        meter = get(id(self))
        if meter is not None:
            meter.count(n)
        return n

    def sendall(self: Any, data: Any, flags: int = 0) -> None:
        if getattr(self, "_sslobj", None) is not None:
            return base_sendall(self, data, flags)
        try:
            base_sendall(self, data, flags)
        except BaseException:
            _lose(self)
            raise
        meter = get(id(self))
        if meter is not None:
            meter.count(_size(data))
        return None

    return {"send": send, "write": write, "sendall": sendall}


def _transport_methods(cls: type) -> Dict[str, Any]:
    """``write`` of an asyncio transport, counted, and ``writelines`` where the class has its own (3.12+
    selector transports, 3.11+ TLS transports); an inherited ``WriteTransport.writelines`` joins and calls
    ``write``, which counts."""
    base_write, get = cls.write, _meters.get  # type: ignore[attr-defined]

    def write(self: Any, data: Any) -> None:
        if _pending_tls and _link_tls(self, data):
            return base_write(self, data)
        base_write(self, data)
        meter = get(id(self))
        if meter is not None:
            meter.count(_size(data))

    methods: Dict[str, Any] = {"write": write}
    if _own_writelines(cls):
        base_writelines = cls.writelines  # type: ignore[attr-defined]

        def writelines(self: Any, list_of_data: Any) -> None:
            items = list(list_of_data)
            base_writelines(self, items)
            meter = get(id(self))
            if meter is not None:
                meter.count(sum(_size(d) for d in items))

        methods["writelines"] = writelines
    return methods


def _sslobject_methods(cls: type) -> Dict[str, Any]:
    """The plaintext ``write`` of an ``ssl.SSLObject`` linked to a connection, counted."""
    base_write, get = cls.write, _meters.get  # type: ignore[attr-defined]

    def write(self: Any, data: Any) -> int:
        n = base_write(self, data)
        meter = get(id(self))
        if meter is not None:
            meter.count(n)
        return n

    return {"write": write}


def _own_writelines(cls: type) -> bool:
    """Whether ``cls.writelines`` is its own, not ``WriteTransport``'s (which joins and calls ``write``)."""
    import asyncio.transports

    for k in cls.__mro__:
        if "writelines" in k.__dict__:
            return k is not asyncio.transports.WriteTransport
    return False


def _metered_class(cls: type, methods: Callable[[type], Dict[str, Any]]) -> type:
    with _classes_lock:
        made = _metered_of.get(cls)
        if made is None:
            made = type("Metered" + cls.__name__, (cls,), dict(methods(cls), __slots__=()))
            _metered_of[cls], _plain_of[made] = made, cls
        return made


def _swap(obj: Any, methods: Callable[[type], Dict[str, Any]]) -> bool:
    cls = type(obj)
    if cls in _plain_of:
        return True
    try:
        obj.__class__ = _metered_class(cls, methods)
    except TypeError:  # a layout the subclass cannot take: leave the object as it is
        return False
    return True


def _unmeter(obj: Any) -> None:
    """Stop counting on ``obj`` (its writes are counted above it from now on)."""
    _meters.pop(id(obj), None)
    plain = _plain_of.get(type(obj))
    if plain is not None:
        try:
            obj.__class__ = plain
        except TypeError:
            pass


def meter_socket(sock: Any, seq: int) -> None:
    """Start counting what the provider writes on a socket just tagged as connection ``seq``."""
    import ssl

    if _get(sock) is not None:
        return
    if _swap(sock, _ssl_methods if isinstance(sock, ssl.SSLSocket) else _socket_methods):
        _set(sock, Meter(seq))


def _take(below: Any) -> Optional[Meter]:
    """The meter of ``below``, which stops counting: what is written through it from now on is written
    through something above it (a TLS layer or a transport), which counts instead. Called before that
    layer is made, so that a TLS handshake it starts is never counted."""
    meter = _get(below)
    if meter is not None:
        _unmeter(below)
    return meter


def _adopt(obj: Any, meter: Optional[Meter]) -> None:
    """``obj`` now writes the plaintext of ``meter``'s connection."""
    import ssl

    if meter is None or obj is None:
        return
    if isinstance(obj, ssl.SSLSocket):
        methods: Callable[[type], Dict[str, Any]] = _ssl_methods
    elif isinstance(obj, ssl.SSLObject):
        methods = _sslobject_methods
    elif isinstance(obj, socket.socket):
        methods = _socket_methods
    else:
        methods = _transport_methods
    if _swap(obj, methods):
        _set(obj, meter)


def _forget_own(app: Any) -> None:
    """Drop the pending link of the ``SSLObject`` of asyncio's TLS transport ``app``, once it exists."""
    obj = getattr(getattr(app, "_ssl_protocol", None), "_sslobj", None)
    if obj is not None and _pending_tls:
        _forget_tls(obj)


def install() -> None:
    """Hook the places where a metered socket is wrapped: ``ssl.SSLSocket._create`` and asyncio's
    transport factories (a cost per connection, never per write). Idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    import ssl
    from asyncio import base_events, selector_events

    create = ssl.SSLSocket.__dict__["_create"].__func__

    def _create(cls: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
        meter = _take(sock)
        made = create(cls, sock, *args, **kwargs)
        _adopt(made, meter)
        return made

    ssl.SSLSocket._create = classmethod(_create)  # type: ignore[assignment]

    create_obj = ssl.SSLObject.__dict__["_create"].__func__

    def _create_obj(cls: Any, incoming: Any, outgoing: Any, server_side: bool = False, *args: Any, **kwargs: Any) -> Any:
        made = create_obj(cls, incoming, outgoing, server_side, *args, **kwargs)
        if not server_side:
            if len(_pending_tls) >= _PENDING_MAX:
                for key in [k for k, r in _pending_tls.items() if r() is None] or list(_pending_tls)[: _PENDING_MAX // 2]:
                    _pending_tls.pop(key, None)
            try:
                _pending_tls[_unit_key()] = weakref.ref(made)
            except TypeError:
                pass
        return made

    ssl.SSLObject._create = classmethod(_create_obj)  # type: ignore[assignment]

    loop_cls = selector_events.BaseSelectorEventLoop
    make_plain, make_ssl = loop_cls._make_socket_transport, loop_cls._make_ssl_transport

    def _make_socket_transport(self: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
        meter = _take(sock)
        transport = make_plain(self, sock, *args, **kwargs)
        _adopt(transport, meter)
        return transport

    def _make_ssl_transport(self: Any, rawsock: Any, *args: Any, **kwargs: Any) -> Any:
        meter = _take(rawsock)
        transport = make_ssl(self, rawsock, *args, **kwargs)
        _adopt(transport, meter)
        _forget_own(transport)
        return transport

    loop_cls._make_socket_transport = _make_socket_transport  # type: ignore[method-assign]
    loop_cls._make_ssl_transport = _make_ssl_transport  # type: ignore[method-assign]

    start_tls = base_events.BaseEventLoop.start_tls

    async def _start_tls(self: Any, transport: Any, *args: Any, **kwargs: Any) -> Any:
        meter = _take(transport)
        app = await start_tls(self, transport, *args, **kwargs)
        _adopt(app, meter)
        _forget_own(app)
        return app

    base_events.BaseEventLoop.start_tls = _start_tls  # type: ignore[method-assign]
