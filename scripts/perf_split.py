"""CPU of one astrabox run by process, from a system-wide perf recording: the kit, each process it started
(the interpreter probe, the entry-point listing, the fork servers, declared services' fakes) and the processes
those forked (the replicas), with how many each forked. docs/performance.md records what it printed.

    perf record -a -e cpu-clock -F 2000 -o perf.data -- astrabox conformance run PROJECT
    python3 scripts/perf_split.py perf.data 2000

Each sample is 1/F s of one CPU. Processes are told apart by perf's fork and exec records; a process's threads
count as it. Linux only; needs `perf script`.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys

FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
COMM = re.compile(r"PERF_RECORD_COMM(?: exec)?: (.*):(\d+)/(\d+)")
SAMPLE = re.compile(r"\s*(\S.*?)\s+(\d+)/(\d+)\s+(\d+\.\d+):")
TIME = re.compile(r"(\d+\.\d+):")


def main() -> None:
    data, hz = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2000.0
    out = subprocess.run(["perf", "script", "-i", data, "--show-task-events", "-F", "comm,pid,tid,time,event"],
                         capture_output=True, text=True, check=True).stdout
    parent, comm, born = {}, {}, {}
    samples: collections.Counter = collections.Counter()
    for line in out.splitlines():
        m = FORK.search(line)
        if m:
            pid, _, ppid, _ = map(int, m.groups())
            if pid != ppid and pid not in parent:  # a new process, not a thread
                parent[pid] = ppid
                t = TIME.search(line)
                born[pid] = float(t.group(1)) if t else 0.0
            continue
        m = COMM.search(line)
        if m:
            comm[int(m.group(2))] = m.group(1)
            continue
        m = SAMPLE.match(line)
        if m:
            samples[int(m.group(2))] += 1
    kits = [p for p, c in comm.items() if c == "astrabox"]
    if not kits:
        sys.exit("no astrabox process in %s" % data)
    kit = kits[0]
    children = collections.defaultdict(list)
    for p, pp in parent.items():
        children[pp].append(p)

    def ms(n: float) -> float:
        return n * 1000.0 / hz

    print("%-34s %9.1f ms" % ("the kit (pid %d)" % kit, ms(samples[kit])))
    replicas, forked = 0, 0.0
    for p in sorted(children[kit], key=lambda q: born.get(q, 0.0)):
        kids = sorted(children[p], key=lambda q: born.get(q, 0.0))
        print("%-34s %9.1f ms, forked %d" % ("  %s %d" % (comm.get(p, "?"), p), ms(samples[p]), len(kids)))
        for k in kids:
            below = [q for q, pp in parent.items() if pp == k]
            own = samples[k] + sum(samples[q] for q in below)
            print("%-34s %9.1f ms" % ("    forked %d (+%d below)" % (k, len(below)), ms(own)))
            replicas += 1
            forked += own
    print("%-34s %9.1f ms in %d processes" % ("forked processes in all", ms(forked), replicas))
    print("%-34s %9.1f ms" % ("idle", ms(samples[0])))


if __name__ == "__main__":
    main()
