"""A provider whose descendant escapes every trace a sweep could follow: it double-forks, calls setsid and
execs a new interpreter with an empty environment (no replica token), in a session of its own.

The escaped process names itself (``/proc/self/comm``) with the marker in ASTRABOX_TEST_MARKER so that the
test can find it, and its pid is appended to the file named by ASTRABOX_TEST_RECORD when that is set.
"""

import os
import subprocess
import sys

from astrabox.seams import RuntimeMaterials, RuntimePreparationProvider

ESCAPEE = "import sys, time; open('/proc/self/comm', 'w').write(sys.argv[1]); time.sleep(600)"


class Provider(RuntimePreparationProvider):
    name = "hostile-escape"

    async def prepare_session(self, *, context):
        marker = os.environ.get("ASTRABOX_TEST_MARKER", "abx-escapee")
        record = os.environ.get("ASTRABOX_TEST_RECORD")
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                p = subprocess.Popen([sys.executable, "-c", ESCAPEE, marker], start_new_session=True, env={})
                os.write(w, b"%d\n" % p.pid)
                os._exit(0)
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as fh:
            pid = fh.read().strip()
        if record:
            with open(record, "a") as fh:
                fh.write(pid + "\n")
        print("escaped", pid)
        return RuntimeMaterials()
