"""Deliberately broken fixture for GEN-NO-DISPATCH: the batched audit write, over a kept-alive TLS socket.

Harbor's object-store release (correct/raw_keepalive_tls) with the batching of its 1.5 release
(broken/gen-no-dispatch-kept-alive): the first successful prepare_turn of a process leaves a flusher thread
that writes its record to the object store when the next turn comes, on the TLS connection the provider
opened while it loaded, while that next turn is in flight. The kit reads the connection's plaintext only
after the TLS it terminates; the harness counts what the provider handed to TLS.
"""

from __future__ import annotations

from batched_audit import BatchedAuditHarbor
from harbor_tls import ObjectsHarbor


class BatchedObjectsHarbor(ObjectsHarbor, BatchedAuditHarbor):
    """Object-store writes (ObjectsHarbor.write_audit), batched (BatchedAuditHarbor.audit)."""

    name = "harbor-objects-batched"
