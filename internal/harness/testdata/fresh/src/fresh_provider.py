"""A provider that keeps, from its import, what belongs to one process: its pid, the time, a random number,
and its settings, read from a file beside it (an audited open). Many real providers do so: a client id made of
the pid, a start time for a token's age, a random instance id."""

import os
import random
import time

from astrabox.seams import RuntimePreparationProvider

IMPORTED_IN = os.getpid()
IMPORTED_AT = time.time()
INSTANCE = random.getrandbits(64)

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings.txt")) as fh:
    SETTINGS = fh.read().strip()

print("imported pid=%d at=%.6f instance=%d settings=%s" % (IMPORTED_IN, IMPORTED_AT, INSTANCE, SETTINGS))


class Provider(RuntimePreparationProvider):
    name = "fresh"
