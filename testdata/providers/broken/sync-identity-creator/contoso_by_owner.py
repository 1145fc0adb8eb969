"""Contoso's provider with the Agent record filed under the Agent's creator.

With one Agent (or one Agent per creator) nothing shows; two Agents of one creator overwrite each other's
record (SYNC-IDENTITY).
"""

from contoso_runtime.provider import ContosoRuntime, record


class ContosoByOwner(ContosoRuntime):
    name = "contoso-runtime-by-owner"

    def _agent_record(self, context):
        return record("agents", context.creator_user_id)
