"""Deliberately broken fixture for LEAK-ERROR: one error text holds the model API key.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks LEAK-ERROR. When a Session's principal has not
granted consent, prepare_session refuses it with a RuntimeError whose text "helpfully" shows the model key
it was configured with. That raise happens only while consent is pending (not a liveness breach), and the
refusal itself is what the platform expects: only the error text breaks a clause.
"""

from __future__ import annotations

from astrabox.seams import PreparationUserActionRequired
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-error"

    async def _enforce_session_consent(self, client, context):
        try:
            await super()._enforce_session_consent(client, context)
        except PreparationUserActionRequired:
            key = (context.config.get("secrets") or {}).get("model_api_key")
            raise RuntimeError(
                "session %s refused: consent pending for %s (configured model key %s)" % (context.session_id, context.principal_id, key)
            ) from None
