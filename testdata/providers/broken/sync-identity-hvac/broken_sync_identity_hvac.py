"""Lakeshore, but the Agent record is kept per configuration version (``agents/<agent>/v<version>``):
after a configuration change the same Agent gets a second Vault record."""
from astrabox.seams import AgentPreparationContext

from lakeshore.provider import LakeshoreProvider


class Provider(LakeshoreProvider):
    name = "broken-sync-identity-hvac"

    def _agent_path(self, context: AgentPreparationContext) -> str:
        return "agents/%s/v%d" % (context.operation.agent_id, context.config_version)
