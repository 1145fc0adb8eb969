"""Deliberately broken fixture for GEN-NO-DISPATCH: a batched audit write on a kept-alive connection.

Harbor keeps one hand-written HTTP/1.1 connection per process, opened while the platform loads it. A later
Harbor release batched the audit trail to save a round trip per turn: the first successful prepare_turn of a
process hands its audit record to a flusher thread and returns; the flusher writes it on the shared
connection when the next turn comes (or after a minute), and the next turn waits for that flush, to keep the
trail in order, before its own requests go out on the same connection. The batched PUT carries no call
header and travels on a connection that neither that turn nor the one in flight opened: only a kit that
tells which call's code wrote each request on the connection can blame the turn that started the flusher.
One batch per process keeps the fixture quick.
"""

from __future__ import annotations

import threading

from harbor_wire import HarborProvider, on_worker

#: A batch is flushed by the next turn, or after a minute without one.
FLUSH_AFTER_S = 60.0


class BatchedAuditHarbor(HarborProvider):
    name = "harbor-batched-audit"

    def __init__(self) -> None:
        super().__init__()
        self.flusher = None  # the audit thread waiting for the next turn of this process
        self.flush = threading.Event()
        self.flushed = threading.Event()

    async def audit(self, session_id: str, attempt_id: str) -> int:
        if self.flusher is not None:
            if not self.flush.is_set():
                # The batch goes out when the next turn comes; wait for it, to keep the trail in order.
                self.flush.set()
                await on_worker(self.flushed.wait, 10)
            return self.AUDIT_OK[0]  # later records: written with the next batch (never, in this process)

        def flush_later() -> None:
            self.flush.wait(FLUSH_AFTER_S)
            try:
                self.write_audit(session_id, attempt_id)
            finally:
                self.flushed.set()

        self.flusher = threading.Thread(target=flush_later, name="harbor-audit-batch")
        self.flusher.start()
        return self.AUDIT_OK[0]
