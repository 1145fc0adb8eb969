"""The harness's bound on material: up to MATERIAL_LIMIT bytes of files are carried, above it a clear refusal
that is decided before any encoding (issue 25.4)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox._harness import values  # noqa: E402
from astrabox.seams import RuntimeFile, RuntimeMaterials  # noqa: E402


class MaterialSizeTest(unittest.TestCase):
    def test_at_the_limit_is_carried(self):
        half = b"\0" * (values.MATERIAL_LIMIT // 2)
        m = RuntimeMaterials(files=(RuntimeFile(name="a.bin", content=half), RuntimeFile(name="b.bin", content=half)))
        self.assertIsNone(values.material_too_large(m))

    def test_above_the_limit_is_refused_with_the_figures(self):
        big = bytearray(values.MATERIAL_LIMIT + 1)
        m = RuntimeMaterials(files=(RuntimeFile(name="token.json", content=b"{}"), RuntimeFile(name="bundle.bin", content=memoryview(big))))
        why = values.material_too_large(m)
        self.assertIsNotNone(why)
        self.assertIn("largest: bundle.bin, 32.0 MiB", why)
        self.assertIn("above the 32 MiB the kit can carry", why)

    def test_other_values_are_not_judged(self):
        self.assertIsNone(values.material_too_large(None))
        self.assertIsNone(values.material_too_large(RuntimeMaterials(files="not a tuple")))


if __name__ == "__main__":
    unittest.main()
