"""Deliberately broken fixture for IMAGE-NO-RETROFIT: writes an executable claude wrapper into the box.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks IMAGE-NO-RETROFIT; everything else stays correct.
"""

from __future__ import annotations

import posixpath

from reference_provider.provider import ReferenceProvider

WRAPPER = b"""#!/bin/sh
# Gate the CLI on the Session token (retrofitted by the provider: not allowed).
case "$1" in -v|--version) exec /usr/local/bin/claude "$@" ;; esac
[ -r "$REFERENCE_TOKEN_FILE" ] || { echo "no session token" >&2; exit 1; }
exec /usr/local/bin/claude "$@"
"""


class Provider(ReferenceProvider):
    name = "broken-image-no-retrofit"

    async def _install_wrapper(self, sandbox) -> None:
        path = posixpath.join(sandbox.home, "bin", "claude")
        if not await sandbox.exists(path):
            await sandbox.write_file(path, WRAPPER, mode=0o755)

    async def synchronize(self, *, context):
        await super().synchronize(context=context)
        await self._install_wrapper(context.sandbox)

    async def prepare_turn(self, *, context):
        materials = await super().prepare_turn(context=context)
        await self._install_wrapper(context.sandbox_handle)
        return materials
