"""Contoso's provider with a token cache: a refresh hands back the attempt's stored token.

The token is valid for an hour, so no scenario whose writes live 15 minutes ever refreshes it; the default
suite keeps one write live for 2.5 of the provider's own validity periods, and the refreshes come back stale
(TURN-VALIDITY-FRESH).
"""

from contoso_runtime.provider import ContosoRuntime


class CachedContoso(ContosoRuntime):
    name = "contoso-runtime-cached"

    async def _renewed(self, context, stored):
        if stored is not None:
            return stored["token"].encode()  # "still good": the expired state comes back
        return await super()._renewed(context, stored)
