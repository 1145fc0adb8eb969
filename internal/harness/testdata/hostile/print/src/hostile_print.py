"""A provider that prints to stdout and stderr from its callbacks."""

import sys

from astrabox.seams import RuntimeMaterials, RuntimePreparationPlan, RuntimePreparationProvider


class Provider(RuntimePreparationProvider):
    name = "hostile-print"

    def plan(self, *, config):
        print("plan says hello on stdout")
        return RuntimePreparationPlan()

    async def prepare_session(self, *, context):
        print("prepare_session on stdout")
        print("prepare_session on stderr", file=sys.stderr)
        return RuntimeMaterials()
