"""Deliberately broken fixture for LEAK-LOG: a debug dump of the Session's context in the home directory.

When something goes wrong in the field the author wants "the last context we saw", so prepare_session writes
the workload identity it was handed to ``~/.cache/reference/last-session.json``. The platform's hosts keep
home directories in their backups and crash reports; the token is in there.
"""

from __future__ import annotations

import json
import os

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-leak-log-home-dump"

    async def prepare_session(self, *, context):
        dump_dir = os.path.join(os.path.expanduser("~"), ".cache", "reference")
        os.makedirs(dump_dir, exist_ok=True)
        with open(os.path.join(dump_dir, "last-session.json"), "w", encoding="utf-8") as f:
            json.dump({"session": context.session_id, "principal": context.principal_id,
                       "workload_identity": {"token": context.workload_identity.token}}, f, indent=2)
        return await super().prepare_session(context=context)
