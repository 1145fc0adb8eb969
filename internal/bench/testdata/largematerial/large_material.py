"""A provider that returns one large file (a bundle of the size in ASTRABOX_BENCH_MATERIAL_BYTES) with every
Session: what BenchmarkLargeMaterial measures the kit's own cost on."""

import os
import random

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationPlan, RuntimePreparationProvider

SIZE = int(os.environ.get("ASTRABOX_BENCH_MATERIAL_BYTES", "4194304"))
BUNDLE = random.Random(7).randbytes(SIZE)


class Provider(RuntimePreparationProvider):
    name = "bench-large-material"

    def plan(self, *, config):
        return RuntimePreparationPlan(session_bound=True, declaration={})

    async def prepare_session(self, *, context):
        return RuntimeMaterials(files=(RuntimeFile(name="bundle.bin", content=BUNDLE),))
