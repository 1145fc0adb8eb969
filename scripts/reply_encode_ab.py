"""Times the encoding of a plan reply two ways in one process, three times (thread CPU, best of 7 x 20,000 calls):
"before" builds the observations' wire form and encodes the whole reply with one encoder (wire._dumps), as the
harness did up to 2026-12-04; "after" is what it does now (wire.encode_frame's top level written by
wire._dumps_message, the empty observations as wire.EMPTY_OBSERVATIONS). Both must give the same text.

Usage: python3 scripts/reply_encode_ab.py internal/harness/python
"""

import sys
import time
import timeit

sys.path.insert(0, sys.argv[1])
from astrabox._harness import runner, wire  # noqa: E402
from astrabox._harness.records import Observations  # noqa: E402

value = {"type": "RuntimePreparationPlan", "repr": "RuntimePreparationPlan(session_bound=True, declaration={'format': 1, "
         "'audience': 'a', 'packages': [], 'skills': []})", "session_bound": True,
         "declaration": {"format": 1, "audience": "a", "packages": [], "skills": []}, "declaration_error": None}

def reply(obs):
    return {"kind": "reply", "id": 12345, "ok": True, "value": value, "error": None, "duration_ns": 38192,
            "observations": obs, "markers": False, "cancel_received": False, "held_past_deadline": False,
            "waited_units": [], "coverage": None}

def before():
    return wire._dumps(reply(Observations().wire()))

def after():
    return wire._dumps_message(reply(runner._observations_wire(Observations())))

assert before() == after()
for _ in range(3):
    b, a = (min(timeit.repeat(f, number=20000, repeat=7, timer=time.thread_time)) / 20000 * 1e6 for f in (before, after))
    print("before %.2f us  after %.2f us" % (b, a))
