"""Lakeshore, but every prepare_turn mints a new Vault token and overwrites the attempt record without
check-and-set ("the newest token is the best token"): a reconnect retry writes a second time."""
import time

from astrabox.seams import RuntimeMaterials, TurnPreparationContext

from lakeshore.provider import LakeshoreProvider, _in_thread, log


class Provider(LakeshoreProvider):
    name = "broken-turn-idempotent-hvac"

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        session = await self._session(context.session_id)
        await self._require_consent(self._consent_base or session["consent_base"], context.principal_id)
        path = "attempts/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        doc = await _in_thread(self._new_token, context.principal_id)
        await _in_thread(self.vault.secrets.kv.v2.create_or_update_secret, path=path, secret=doc, mount_point="kv")
        log.info("turn %s/%s ready", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(self._file(doc),), turn_validity_seconds=120.0)
