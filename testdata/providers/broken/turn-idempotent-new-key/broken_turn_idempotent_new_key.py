"""Larkspur (correct/larkspur) with a new Idempotency-Key per call: every retry of an attempt mints a token.

The attempt's record still holds a key, but this variant never reuses it: each prepare_turn asks the token
API with a fresh uuid4, as a client that generates its idempotency key per request would.
"""
import uuid

from larkspur import LarkspurProvider


class Provider(LarkspurProvider):
    name = "broken-turn-idempotent-new-key"

    async def _material(self, client, path, context, refresh):
        version, _ = await self._load_attempt(client, path)
        document = await self._token(context, str(uuid.uuid4()), refresh)
        await self._store_attempt(client, path, {"session_id": context.session_id, "key": "unused"}, version)
        return {"session_id": context.session_id, "document": document}, "issued with a new key"
