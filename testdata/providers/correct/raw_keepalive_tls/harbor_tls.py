"""Harbor, with its audit trail moved to Tailspin's object store, over one TLS connection kept alive.

The store speaks HTTPS only. Harbor keeps its habit of one connection per destination per process, opened
when the provider is constructed: a plain socket to ``objects.tailspin.example:443`` wrapped with
``ssl.SSLContext.wrap_socket`` (the system's trust store, which the deployment points at its authority), and
every audit record written on it by hand. A record is created with ``expect_revision: 0``: a second attempt
finds it (409) and changes nothing. Consent reads stay on the connection to the deployment's services.
"""

from __future__ import annotations

import json
import socket
import ssl

from harbor_wire import HarborProvider, KeptAlive

OBJECTS = ("objects.tailspin.example", 443)


def open_objects() -> socket.socket:
    """A TLS connection to the object store, verified against the system's trust store."""
    raw = socket.create_connection(OBJECTS, timeout=10)
    try:
        return ssl.create_default_context().wrap_socket(raw, server_hostname=OBJECTS[0])
    except BaseException:
        raw.close()
        raise


class ObjectsHarbor(HarborProvider):
    name = "harbor-objects"
    AUDIT_OK = (201, 409)

    def __init__(self) -> None:
        super().__init__()
        self.objects = KeptAlive(open_objects, "%s:%d" % OBJECTS)
        try:
            self.objects.open()  # while the platform loads the provider, like the other connection
        except OSError:
            pass  # the store is not reachable yet (a tool that only inspects the provider): opened on first use

    def write_audit(self, session_id: str, attempt_id: str) -> int:
        doc = {"expect_revision": 0, "data": {"session": session_id, "attempt": attempt_id}}
        status, _ = self.objects.exchange("POST", "/v2/objects/harbor-audit/%s/%s" % (session_id, attempt_id),
                                          json.dumps(doc, sort_keys=True).encode(), ("Content-Type: application/json",))
        return status
