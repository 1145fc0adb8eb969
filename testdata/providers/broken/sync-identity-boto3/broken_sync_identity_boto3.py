"""Kestrel, keying the Agent's inventory item per pool lifetime (``agent#<agent>#<preparation_id>``): every
pool member of the same Agent gets an item of its own."""
from kestrel.provider import KestrelProvider


class Provider(KestrelProvider):
    name = "broken-sync-identity-boto3"

    def _agent_key(self, context) -> str:
        return f"agent#{context.operation.agent_id}#{context.preparation_id}"
