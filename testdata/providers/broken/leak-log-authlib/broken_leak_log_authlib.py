"""Quillfeather, logging the exchanged user token at INFO "to correlate with the IdP's audit log"."""
from quillfeather.provider import LOG, QuillfeatherProvider, blocking


class Provider(QuillfeatherProvider):
    name = "broken-leak-log-authlib"

    async def prepare_session(self, *, context):
        materials = await super().prepare_session(context=context)
        import json
        LOG.info("exchanged token for %s: %s", context.principal_id, json.loads(materials.files[0].content)["access_token"])
        return materials
