"""The same provider after a debugging session: it logs the grant the identity service answered, token and all."""
import logging

from northwind_tokens import provider as base

log = logging.getLogger("northwind.tokens.debug")


class DebugTokenProvider(base.TokenProvider):
    name = "northwind-tokens-debug"

    async def prepare_session(self, *, context):
        grant = base.fetch_token(context.principal_id)
        log.warning("identity answered %r", grant)
        return await super().prepare_session(context=context)
