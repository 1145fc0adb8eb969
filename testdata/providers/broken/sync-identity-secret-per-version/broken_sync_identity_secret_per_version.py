"""Larkspur (correct/larkspur) with the Agent's secret named per configuration version.

``larkspur/agents/<agent>-v<version>``: every new Agent version creates another secret in Secrets Manager
and leaves the old one behind.
"""
from larkspur import LarkspurProvider


class Provider(LarkspurProvider):
    name = "broken-sync-identity-secret-per-version"

    def _agent_record_key(self, context):
        return ("agents", "%s-v%d" % (context.operation.agent_id, context.config_version))
