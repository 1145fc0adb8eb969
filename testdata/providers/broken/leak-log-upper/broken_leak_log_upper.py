"""Deliberately broken fixture for LEAK-LOG: logs the model API key upper-cased.

The author normalises hex keys to upper case "for the vendor's console" and logs the normalised key at
DEBUG while checking the configuration. An upper-cased hex key is still the key.
"""

from __future__ import annotations

import logging

from reference_provider.provider import ReferenceProvider

logger = logging.getLogger("broken_leak_log_upper")


class Provider(ReferenceProvider):
    name = "broken-leak-log-upper"

    async def synchronize(self, *, context):
        key = (context.config.get("secrets") or {}).get("model_api_key")
        if isinstance(key, str):
            logger.warning("using model key %s", key.upper())
        return await super().synchronize(context=context)
