"""Times the harness's own work for one `plan` call in a warm loop inside one process (no pipes, no wake-ups).

Usage: python3 scripts/harness_warm.py SDK_DIR PROVIDER_DIR
Prints the best of five batch medians, in microseconds. `make bench` runs it on the reference provider; docs/performance.md
compares it with the round trip through a real harness process.
"""

import asyncio
import fcntl
import json
import os
import statistics
import sys
import time


def main() -> None:
    sdk, project = sys.argv[1], sys.argv[2]
    sys.path.insert(0, sdk)
    null = os.open(os.devnull, os.O_WRONLY)
    saved = fcntl.fcntl(1, fcntl.F_DUPFD, 10), fcntl.fcntl(2, fcntl.F_DUPFD, 10)  # clear of 3 and 4
    os.dup2(null, 4)  # replies go nowhere
    os.dup2(null, 1)  # nor do sync markers
    os.dup2(null, 2)
    import astrabox
    from astrabox._harness import runner, wire
    from astrabox._harness.observe import Observer

    observer = Observer(os.path.dirname(astrabox.__file__))
    observer.install()
    r = runner.Runner("bench", wire.Writer(), observer)
    r.loop = asyncio.new_event_loop()
    asyncio.set_event_loop(r.loop)
    r.deliver({"kind": "call", "id": 1, "method": "load", "args": {
        "target": "reference_provider.provider:ReferenceProvider", "paths": [os.path.join(project, "src")],
        "project_root": project}})
    config = {"agent": {"display_name": "x", "model": "m", "instructions": "i"},
              "deployment": {"base_url": "u", "audience": "a"}, "packages": [], "skills": [], "secrets": {}}
    # Five batches of 2,000 calls; the best batch median is reported, as timeit does: on a shared virtual
    # machine a batch sometimes runs at half speed for reasons outside the process.
    medians = []
    call_id = 2
    for _ in range(5):
        times = []
        for _ in range(2000):
            body = json.dumps({"kind": "call", "id": call_id, "method": "plan", "args": {"config": config},
                               "timeout_s": 5}).encode()
            call_id += 1
            start = time.perf_counter_ns()
            r.deliver(wire.decode_request(body))
            times.append(time.perf_counter_ns() - start)
        medians.append(statistics.median(times))
    sys.stdout.flush()
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.write(1, b"%.1f\n" % (min(medians) / 1000))


if __name__ == "__main__":
    main()
