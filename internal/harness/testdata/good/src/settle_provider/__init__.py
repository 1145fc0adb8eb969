"""A provider for the harness's settling and observation tests: plan does the I/O config["io"] names,
prepare_turn leaves the work config-free attempt ids ask for, prepare_session returns a file whose content is
not bytes."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from astrabox.seams import RuntimeFile, RuntimeMaterials, RuntimePreparationPlan, RuntimePreparationProvider

_POOL = ThreadPoolExecutor(max_workers=1)

_IO = {
    "getfqdn": lambda: socket.getfqdn("localhost"),
    "gethostbyaddr": lambda: socket.gethostbyaddr("127.0.0.1"),
    "gethostbyname": lambda: socket.gethostbyname("localhost"),
    "getnameinfo": lambda: socket.getnameinfo(("127.0.0.1", 80), 0),
    "getaddrinfo": lambda: socket.getaddrinfo("localhost", 80),
    "listdir": lambda: os.listdir("."),
    "scandir": lambda: list(os.scandir(".")),
}


class Provider(RuntimePreparationProvider):
    name = "settle"

    def plan(self, *, config):
        io = config.get("io")
        if io:
            try:
                _IO[io]()
            except OSError:
                pass
        return RuntimePreparationPlan()

    async def prepare_turn(self, *, context):
        kind = context.dispatch_attempt_id
        if kind == "thread":
            threading.Thread(target=lambda: (time.sleep(0.2), print("thread-late", flush=True))).start()
        elif kind == "timer":
            threading.Timer(0.2, print, args=("timer-late",), kwargs={"flush": True}).start()
        elif kind == "pool":
            _POOL.submit(lambda: (time.sleep(0.2), print("pool-late", flush=True)))
        elif kind == "task":
            async def later():
                await asyncio.sleep(0.2)
                print("task-late", flush=True)
            asyncio.get_running_loop().create_task(later())
        elif kind == "call_later":
            asyncio.get_running_loop().call_later(0.2, print, "call-later-late")
        elif kind == "forever":
            threading.Thread(target=lambda: time.sleep(30), daemon=True).start()
        elif kind == "idle-child":
            subprocess.Popen(["sleep", "30"])  # a helper never waited for, asleep all along
        elif kind == "busy-child":
            subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"])
        elif kind == "script-child":
            subprocess.Popen(["sh", "-c", "sleep 0.3; echo script-late"])  # asleep, but through a child of its own
        elif kind == "exit":
            raise SystemExit(7)
        return RuntimeMaterials()

    async def prepare_session(self, *, context):
        return RuntimeMaterials(files=(RuntimeFile("a.txt", "not bytes"), RuntimeFile("b.txt", None)))
