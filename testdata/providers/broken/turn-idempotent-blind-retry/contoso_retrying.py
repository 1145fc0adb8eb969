"""Contoso's provider with a "resilient" store: when the attempt's record write gets no answer, it issues a
new token and writes again, and answers with that token whatever the second write says.

The first write was applied before its answer was lost, so the second is refused (412) and the attempt's
record keeps the first token: the call answers a duplicate token nobody stored, and the reconnect retry on
another replica gets the stored one (TURN-IDEMPOTENT).
"""

from contoso_runtime.http import ServiceError, call
from contoso_runtime.provider import ContosoRuntime


class RetryingContoso(ContosoRuntime):
    name = "contoso-runtime-retrying"

    async def _publish(self, context, path, token, version):
        try:
            return await super()._publish(context, path, token, version)
        except ServiceError:
            token = await self._token(context.principal_id, context.deadline)
            await call("PUT", path, {"value": {"token": token.decode()}}, deadline=context.deadline, if_match=version)
            return token
