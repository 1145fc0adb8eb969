"""Deliberately broken fixture for GEN-SETTLES: prepare_session calls sys.exit when it has prepared a Session.

Code lifted from a command-line tool ("done: exit 0") ends the host process on the platform's asyncio host:
SystemExit is not an ordinary exception there. The kit used to treat it as one (a raise); the replica now dies
as it would on the platform.
"""

from __future__ import annotations

import sys

from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-gen-settles-system-exit"

    async def prepare_session(self, *, context):
        await super().prepare_session(context=context)
        print("session %s prepared" % context.session_id)
        sys.exit(0)
