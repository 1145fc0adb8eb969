"""Quillfeather, with consent checked only when the Session is prepared ("it was granted a moment ago"):
prepare_turn never asks Quillfeather again, so a turn of a principal whose consent is pending goes through."""
from quillfeather.provider import QuillfeatherProvider


class Provider(QuillfeatherProvider):
    name = "broken-ua-authority-authlib"

    async def prepare_turn(self, *, context):
        async def granted(_principal):
            return None
        self._require_consent = granted  # consent was settled by prepare_session
        try:
            return await super().prepare_turn(context=context)
        finally:
            del self._require_consent
