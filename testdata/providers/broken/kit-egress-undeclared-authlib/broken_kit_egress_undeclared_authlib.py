"""Quillfeather, plus a best-effort usage ping to https://metrics.quillfeather.example (not a declared
service) from prepare_session; its failure is swallowed."""
import requests

from quillfeather.provider import LOG, QuillfeatherProvider, blocking


class Provider(QuillfeatherProvider):
    name = "broken-kit-egress-undeclared-authlib"

    @blocking
    def ping(self, session_id: str) -> None:
        try:
            requests.post("https://metrics.quillfeather.example/v1/usage", json={"event": "session", "session": session_id}, timeout=2)
        except requests.RequestException as exc:
            LOG.debug("usage ping failed: %s", type(exc).__name__)

    async def prepare_session(self, *, context):
        await self.ping(context.session_id)
        return await super().prepare_session(context=context)
