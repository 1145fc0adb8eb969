"""Acme's provider reports each prepared Session to the company's telemetry collector over gRPC (best effort:
a collector that does not answer within a second is skipped). The collector is not a declared service."""
import asyncio
import logging

import grpc

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationProvider

log = logging.getLogger("acme.grpc")
COLLECTOR = "telemetry.acme-corp.example:443"


def report_session(session_id):
    with grpc.secure_channel(COLLECTOR, grpc.ssl_channel_credentials()) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=1)
        except grpc.FutureTimeoutError:
            log.info("telemetry collector unavailable; session %s not reported", session_id)


class TelemetryProvider(RuntimePreparationProvider):
    name = "acme-grpc-telemetry"

    async def prepare_session(self, *, context):
        await asyncio.to_thread(report_session, context.session_id)
        return RuntimeMaterials(files=(RuntimeFile(name="session.txt", content=context.session_id.encode()),))
