"""Deliberately broken fixture for LEAK-LOG: the workload token printed in pieces, one line each.

Someone debugging a token exchange wanted the token "readable in a narrow terminal" and printed it wrapped at
twenty characters, one print call per piece. No line holds the whole token; together they do.
"""

from __future__ import annotations

from reference_provider.provider import ReferenceProvider

WRAP = 20


class Provider(ReferenceProvider):
    name = "broken-leak-log-split"

    async def prepare_session(self, *, context):
        token = context.workload_identity.token
        print("workload token for %s:" % context.principal_id)
        for i in range(0, len(token), WRAP):
            print(token[i : i + WRAP])
        return await super().prepare_session(context=context)
