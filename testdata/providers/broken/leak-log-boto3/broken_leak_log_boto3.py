"""Kestrel, logging the tool API key read from Secrets Manager at INFO ("which key version is live?")."""
from kestrel.provider import KestrelProvider, logger


class Provider(KestrelProvider):
    name = "broken-leak-log-boto3"

    def _tool_key(self) -> str:
        key = super()._tool_key()
        logger.info("tool api key in use: %s", key)
        return key
