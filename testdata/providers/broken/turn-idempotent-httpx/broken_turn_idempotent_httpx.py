"""Brightwave, but the Idempotency-Key is a fresh uuid4 per call and the attempt's credential is not read
first: httpx's and our retries stay safe, a reconnect retry of the attempt issues a second credential."""
import uuid

from astrabox.seams import RuntimeMaterials, RuntimeFile, TurnPreparationContext

from brightwave.provider import CREDENTIAL_FILE, BrightwaveProvider


class Provider(BrightwaveProvider):
    name = "broken-turn-idempotent-httpx"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        session = await self._session(context.session_id)
        await self._enforce(self.deployment_url or session["deployment"], context.principal_id)
        url = f"/v1/sessions/{context.session_id}/attempts/{context.dispatch_attempt_id}/credential"
        resp = await self._write("POST", url, key=str(uuid.uuid4()), json_body={"principal": context.principal_id})
        resp.raise_for_status()
        cred = resp.json()
        return RuntimeMaterials(files=(RuntimeFile(name=CREDENTIAL_FILE, content=self._document(cred, context.principal_id)),),
                                turn_validity_seconds=120.0)
