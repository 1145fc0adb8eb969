"""TLS trust: every client library trusts the run's certificate authority, and a failed verification is
reported as what it is.

The kit terminates TLS for the provider's declared services with a certificate authority made for the run
and names one bundle (the run's authority and the system's roots) in every variable a client library reads
(``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``, ``AWS_CA_BUNDLE``, ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, ...; see
internal/egress). Some libraries read no variable: they pass ``certifi.where()`` to the TLS context
themselves (botocore by default, httpx when ``trust_env`` is off, and much code written for aiohttp). For
them this module makes ``certifi.where()`` answer the same bundle, in this replica only: certifi's own file
is never written (it belongs to the installation, may be read-only, and other programs read it), and the
bundle keeps the system's roots, so a client that verifies another host still verifies it for real.

A verification that fails anyway (a provider that pins its own CA file, a library the kit does not know)
would otherwise surface as a retry loop until the callback's deadline. The module remembers, for every
``ssl.SSLContext``, which trust store was loaded into it and by which library, and records each
``ssl.SSLCertVerificationError`` of a handshake with a declared service as a :class:`TLSFailure`: the
library, the trust store it read, whether the run's authority was in it, and the provider's line.
"""

from __future__ import annotations

import os
import ssl
import sys
import weakref
from typing import Any, Callable, List, Tuple

from astrabox._harness.records import TLSFailure
from astrabox._harness.values import MESSAGE_LIMIT, safe_str, truncate

#: The variable naming the run's CA bundle (internal/egress CABundleEnv).
CA_BUNDLE_ENV = "ASTRABOX_EGRESS_CA_BUNDLE"
#: The common name of the run's authority (internal/egress NewCA).
RUN_CA_NAME = "astrabox run CA"

_installed = False
#: What was loaded into each context, and the library that loaded it: context -> (library, [sources]).
_contexts: "weakref.WeakKeyDictionary[Any, Tuple[str, List[str]]]" = weakref.WeakKeyDictionary()


def _library(frame: Any, is_provider: Callable[[str], bool]) -> str:
    """The library the provider called that is on the stack from ``frame``: the outermost frame of a module
    outside the standard library and the provider's own files, below the provider's innermost frame."""
    lib = ""
    stdlib = os.path.dirname(os.__file__)
    f = frame
    while f is not None:
        filename = f.f_code.co_filename
        if is_provider(filename):
            break
        name = f.f_globals.get("__name__") or ""
        in_stdlib = filename.startswith(stdlib) and "-packages" not in filename
        if isinstance(name, str) and name and not name.startswith("astrabox") and not in_stdlib \
                and not filename.startswith("<"):
            lib = name.split(".", 1)[0]
        f = f.f_back
    return lib


def _patch_certifi(bundle: str) -> None:
    """Make ``certifi.where()`` (and ``contents()``) answer the run's bundle, when certifi is installed."""
    import importlib.util

    try:
        if importlib.util.find_spec("certifi") is None:
            return
        import certifi  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - a broken certifi is the provider's to meet
        return

    def where() -> str:
        return bundle

    def contents() -> str:
        with open(bundle, "r", encoding="ascii") as fh:
            return fh.read()

    for module in (certifi, getattr(certifi, "core", None)):
        if module is not None:
            module.where = where
            if hasattr(module, "contents"):
                module.contents = contents


def _remember(ctx: Any, source: str, is_provider: Callable[[str], bool]) -> None:
    try:
        entry = _contexts.get(ctx)
        if entry is None:
            entry = (_library(sys._getframe(2), is_provider), [])
            _contexts[ctx] = entry
        if source not in entry[1]:
            entry[1].append(source)
    except Exception:  # noqa: BLE001 - never break the provider's TLS setup
        pass


def _watch_contexts(is_provider: Callable[[str], bool]) -> None:
    base = ssl.SSLContext.__mro__[1]  # _ssl._SSLContext, where the C methods live
    load_verify = base.load_verify_locations
    set_default = base.set_default_verify_paths
    load_default = ssl.SSLContext.load_default_certs

    def load_verify_locations(self: Any, cafile: Any = None, capath: Any = None, cadata: Any = None) -> None:
        if cafile is not None:
            _remember(self, "the CA file %s" % safe_str(os.fspath(cafile) if not isinstance(cafile, bytes) else cafile.decode("utf-8", "replace"), 512), is_provider)
        if capath is not None:
            _remember(self, "the CA directory %s" % safe_str(capath, 512), is_provider)
        if cadata is not None:
            _remember(self, "CA data given in code (%d bytes)" % len(cadata), is_provider)
        return load_verify(self, cafile, capath, cadata)

    def set_default_verify_paths(self: Any) -> None:
        _remember(self, _default_paths(), is_provider)
        return set_default(self)

    def load_default_certs(self: Any, purpose: Any = ssl.Purpose.SERVER_AUTH) -> None:
        _remember(self, _default_paths(), is_provider)
        return load_default(self, purpose)

    ssl.SSLContext.load_verify_locations = load_verify_locations  # type: ignore[method-assign]
    ssl.SSLContext.set_default_verify_paths = set_default_verify_paths  # type: ignore[method-assign]
    ssl.SSLContext.load_default_certs = load_default_certs  # type: ignore[method-assign]


def _default_paths() -> str:
    env = os.environ.get("SSL_CERT_FILE")
    if env:
        return "OpenSSL's default trust store (SSL_CERT_FILE=%s)" % env
    return "OpenSSL's default trust store (%s)" % ssl.get_default_verify_paths().openssl_cafile


def _run_ca_loaded(ctx: Any) -> bool:
    try:
        for cert in ctx.get_ca_certs():
            for rdn in cert.get("subject", ()):
                for key, value in rdn:
                    if key == "commonName" and value == RUN_CA_NAME:
                        return True
    except Exception:  # noqa: BLE001
        pass
    return False


def _watch_handshakes(report: Callable[[Any, BaseException, Any], None]) -> None:
    for cls in (ssl.SSLSocket, ssl.SSLObject):
        original = cls.do_handshake

        def do_handshake(self: Any, *args: Any, _orig: Any = original, **kwargs: Any) -> Any:
            try:
                return _orig(self, *args, **kwargs)
            except ssl.SSLCertVerificationError as exc:
                report(self, exc, sys._getframe(1))
                raise

        cls.do_handshake = do_handshake  # type: ignore[method-assign]


def install(record: Callable[[Any], None], guarded: Callable[..., None], locate: Callable[[Any], Any],
            is_provider: Callable[[str], bool], declared: Callable[[str], bool]) -> bool:
    """Patch certifi and watch TLS contexts and handshakes when the kit gave a CA bundle (idempotent).

    ``record`` takes a :class:`TLSFailure` (routed to the call in flight), ``guarded`` runs an observation
    source safely, ``locate`` finds the provider's frame on a stack, ``is_provider`` tells a provider file and
    ``declared`` whether a host name is a declared service.
    """
    global _installed
    if _installed:
        return True
    bundle = os.environ.get(CA_BUNDLE_ENV)
    if not bundle:
        return False
    _patch_certifi(bundle)
    _watch_contexts(is_provider)

    def failure(sock: Any, exc: BaseException, frame: Any) -> None:
        host = getattr(sock, "server_hostname", None) or ""
        if not declared(host):
            return
        ctx = getattr(sock, "context", None)
        library, sources = _contexts.get(ctx, ("", [])) if ctx is not None else ("", [])
        if not sources:
            sources = ["no trust store loaded into its context"]
        caller = _library(frame, is_provider) or library
        where = locate(frame)
        record(TLSFailure(host=safe_str(host, 256), library=caller or library or "ssl",
                          context_library=library, trust=list(sources), run_ca=_run_ca_loaded(ctx),
                          message=truncate(safe_str(exc, MESSAGE_LIMIT), 1024), file=where.file, line=where.line,
                          function=where.function))

    _watch_handshakes(lambda sock, exc, frame: guarded(failure, sock, exc, frame))
    _installed = True
    return True
