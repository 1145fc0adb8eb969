"""Deliberately broken fixture for SYNC-SKIP-UNCHANGED: writes the Agent record on every synchronize.

It subclasses the reference provider (examples/providers/reference, added to sys.path through
[tool.astrabox] python-path) and overrides only what breaks SYNC-SKIP-UNCHANGED; everything else stays correct.
"""

from __future__ import annotations

from reference_provider.deployment import DeploymentError, record_path
from reference_provider.provider import ReferenceProvider


class Provider(ReferenceProvider):
    name = "broken-sync-skip-unchanged"

    async def _write_if_changed(self, client, key, spec, operation):
        path = record_path(*key)
        for _ in range(self.CAS_ATTEMPTS):
            version, _value = await self._read_record(client, path)
            # No comparison: the record is rewritten even when nothing changed.
            answer = await client.request(
                "PUT", path, {"value": {"spec": spec, "written_by": operation.operation_id}}, if_match=version
            )
            if answer.status == 200:
                return "written"
            if answer.status != 412:
                raise DeploymentError("PUT %s answered %d" % (path, answer.status))
        raise DeploymentError("PUT %s kept conflicting" % path)
