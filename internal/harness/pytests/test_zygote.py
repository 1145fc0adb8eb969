"""zygote: the fork server's helpers (the token stamp, the stop watch, process trees, the environment and the
process limit of a forked harness) and the server itself spoken to as Go speaks to it, over a
``SOCK_SEQPACKET`` socket with the four descriptors attached, with a stand-in for ``runner`` that reports what
a forked harness finds. Everything that changes a process (its environment, limits, signals) happens in a
child process; every wait is on a message, a descriptor or a process state, with a bound. Linux only, like
the fork server."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import zygote  # noqa: E402

WAIT = 30.0  # seconds: a bound on waiting for a message or a state, never a pause (harnessclient.WAIT too; a fork server took over 10 s to say ready at a load of 36)
LINUX = sys.platform.startswith("linux")
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}


def state(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2:].split()[0]


def wait_until(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.005)


def python(code, *args, env=None, **kwargs):
    full = dict(BASE_ENV, PYTHONDONTWRITEBYTECODE="1")
    full.update(env or {})
    return subprocess.Popen([sys.executable, "-B", "-c", code, PYTHON_DIR] + list(args), env=full, **kwargs)


PRELUDE = "import sys; sys.path.insert(0, sys.argv[1]); from astrabox._harness import zygote\n"


@unittest.skipUnless(LINUX, "the fork server is Linux only")
class Helpers(unittest.TestCase):
    def run_child(self, code, env=None):
        proc = python(PRELUDE + code, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        return json.loads(out)

    def test_stamp_token_overwrites_the_placeholder_of_the_same_length_only(self):
        code = ("import json; print(json.dumps([zygote.stamp_token('short'), zygote.stamp_token('tok-1234'), "
                "open('/proc/self/environ', 'rb').read().decode().split('\\0')]))")
        short, stamped, environ = self.run_child(code, env={zygote.TOKEN_VAR: "........"})
        self.assertFalse(short)
        self.assertTrue(stamped)
        self.assertIn(zygote.TOKEN_VAR + "=tok-1234", environ)
        missing = self.run_child("import json; print(json.dumps([zygote.stamp_token('tok-1234'), "
                                 "zygote.stamp_token('')]))")
        self.assertEqual(missing, [False, False])


    def test_a_forked_child_stamps_its_token_where_the_server_found_the_placeholder(self):
        # The server finds the placeholder once (prepare_stamp); each forked child copies its own token there,
        # and /proc/self/environ of that child (and of nothing else) shows it.
        code = ("import json, os\n"
                "zygote.prepare_stamp()\n"
                "found = bool(zygote._STAMP)\n"
                "r, w = os.pipe()\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    res = [zygote.stamp_token('short'), zygote.stamp_token('tok-%d' % 1234),\n"
                "           open('/proc/self/environ', 'rb').read().decode().split('\\0')]\n"
                "    os.write(w, json.dumps(res).encode()); os._exit(0)\n"
                "os.close(w)\n"
                "data = b''\n"
                "while True:\n"
                "    chunk = os.read(r, 65536)\n"
                "    if not chunk: break\n"
                "    data += chunk\n"
                "os.waitpid(pid, 0)\n"
                "print(json.dumps([found, json.loads(data), open('/proc/self/environ', 'rb').read().decode().split('\\0')]))")
        found, (short, stamped, child_env), server_env = self.run_child(code, env={zygote.TOKEN_VAR: "........"})
        self.assertTrue(found)
        self.assertFalse(short)
        self.assertTrue(stamped)
        self.assertIn(zygote.TOKEN_VAR + "=tok-1234", child_env)
        self.assertIn(zygote.TOKEN_VAR + "=........", server_env)
        none = self.run_child("import json; zygote.prepare_stamp(); print(json.dumps(zygote._STAMP))")
        self.assertEqual(none, [])
    def test_take_environ_makes_env_the_whole_environment(self):
        code = ("import ctypes, json, os; zygote._take_environ({'KEEP': 'same', 'CHANGE': 'new', 'ADD': 'x'}); "
                "libc = ctypes.CDLL(None); libc.getenv.restype = ctypes.c_char_p; "
                "print(json.dumps([dict(os.environ), libc.getenv(b'DROP'), libc.getenv(b'CHANGE').decode()]))")
        environ, c_drop, c_change = self.run_child(code, env={"KEEP": "same", "CHANGE": "old", "DROP": "y"})
        self.assertEqual(environ, {"KEEP": "same", "CHANGE": "new", "ADD": "x"})
        self.assertIsNone(c_drop)  # the C environment too: what the provider's subprocesses inherit
        self.assertEqual(c_change, "new")

    def test_limit_procs(self):
        code = ("import json, resource; out = []\n"
                "for v in ('', 'x', '0', '-1', '4000'):\n"
                "    zygote._limit_procs(v); out.append(resource.getrlimit(resource.RLIMIT_NPROC))\n"
                "print(json.dumps(out))")
        out = self.run_child(code)
        self.assertEqual(out[0], out[1])
        self.assertEqual(out[0], out[3])  # nothing for empty, unparsable, zero or negative
        self.assertEqual(out[4], [4000, 4000])

    def test_process_trees(self):
        code = ("import subprocess, sys; p = subprocess.Popen(['sleep', '30']); print(p.pid, flush=True); "
                "sys.stdin.read(); p.kill(); p.wait()")
        parent = python(code, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (parent.kill(), parent.communicate(timeout=WAIT)))
        grandchild = int(parent.stdout.readline())
        self.assertIn(parent.pid, zygote._children_of()[os.getpid()])
        self.assertIn(parent.pid, zygote._children(os.getpid()))
        self.assertEqual(zygote._children(parent.pid), [grandchild])
        zygote._kill_tree(parent.pid)
        wait_until(lambda: state(grandchild) in (None, b"Z"), "the grandchild to die")
        wait_until(lambda: parent.poll() is not None, "the root to die")
        self.assertEqual(parent.returncode, -signal.SIGKILL)

    def test_guard_refuses_signals_to_the_server_only(self):
        # In a child of a child (the "server"): the guard refuses kill of the server from Python (audit hook)
        # and below it (the kill command: the seccomp filter), and lets other signals through.
        code = ("import json, os, signal, subprocess\n"
                "server = os.getpid()\n"
                "zygote._PROGRAM.append(zygote._seccomp_program(server))\n"
                "r, w = os.pipe()\n"
                "if os.fork() == 0:\n"
                "    out = {'seccomp': zygote._guard(server)}\n"
                "    try:\n"
                "        os.kill(server, signal.SIGKILL)\n"
                "    except PermissionError as exc:\n"
                "        out['python'] = str(exc)\n"
                "    out['command'] = subprocess.run(['kill', '-KILL', str(server)], capture_output=True).returncode\n"
                "    out['group'] = subprocess.run(['kill', '-KILL', '--', str(-server)], capture_output=True).returncode\n"
                "    s = subprocess.Popen(['sleep', '30'])\n"
                "    os.kill(s.pid, signal.SIGKILL)\n"
                "    out['other'] = s.wait()\n"
                "    os.write(w, json.dumps(out).encode())\n"
                "    os._exit(0)\n"
                "os.close(w)\n"
                "print(os.read(r, 65536).decode())\n")
        out = self.run_child(code)
        self.assertTrue(out["seccomp"], out)
        self.assertIn("is the fork server", out.get("python", ""))
        self.assertNotEqual(out["command"], 0)
        self.assertNotEqual(out["group"], 0)
        self.assertEqual(out["other"], -signal.SIGKILL)

    def test_preload_leaves_nothing_a_replica_could_see(self):
        # The server rehearses a harness's start and load before its first fork (zygote.rehearse): whatever it
        # made must be gone by the fork, or every replica would inherit it.
        facts = self.run_child(r"""
import asyncio, json, linecache, logging, os, threading
from astrabox import seams

main = threading.current_thread()

def seen():
    policy = asyncio.get_event_loop_policy()
    # The after-fork rehearsal (zygote.rehearse_after_fork) must leave threading's main thread and logging's
    # lock as they were: the same main thread, alive, a thread that starts and is joined, the lock free.
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join(5)
    lock = logging._lock
    free = lock.acquire(blocking=False)
    if free:
        lock.release()
    return {"fds": sorted(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
            "subclasses": [c.__name__ for c in seams.RuntimePreparationProvider.__subclasses__()],
            "linecache": sorted(linecache.cache), "loop": getattr(policy._local, "_loop", None) is None,
            "main": threading.main_thread() is main and main.is_alive(), "joined": not t.is_alive(),
            "logging_lock_free": free}

before = seen()
zygote.preload()
after = seen()
print(json.dumps({"before": before, "after": after, "rehearsed": zygote.REHEARSALS}))
""")
        self.assertGreater(facts["rehearsed"], 0)
        self.assertEqual(facts["after"], facts["before"])
        self.assertEqual(facts["after"]["subclasses"], [])
        self.assertEqual(facts["after"]["threads"], 1)
        self.assertTrue(facts["after"]["main"] and facts["after"]["joined"] and facts["after"]["logging_lock_free"])

    def test_the_prepared_observer_is_quiet_in_the_server_and_listens_in_each_harness(self):
        # The server installs the observer's process-independent sources once (Observer.prepare): nothing the
        # server does may be recorded, and each forked harness gets its own copy, empty, that records its own.
        facts = self.run_child(r"""
import json, logging, os, warnings
from astrabox._harness import observe
zygote.preload()
prepared = observe.PREPARED[0]
logging.getLogger("server").warning("in the server")
warnings.warn("a warning in the server")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    mine = observe.Observer.for_process("unused")
    mine.install()
    logging.getLogger("harness").warning("in the harness %d", os.getpid())
    obs = mine.take_background()
    os.write(w, json.dumps({"same": mine is prepared, "left": observe.PREPARED == [],
                            "logs": [l.message for l in obs.logs] if obs else []}).encode())
    os._exit(0)
os.close(w)
child = json.loads(os.read(r, 65536))
os.waitpid(pid, 0)
print(json.dumps({"server": prepared.take_background() is None, "child": child, "pid": pid}))
""")
        self.assertTrue(facts["server"], "the server's own log and warning were recorded")
        self.assertTrue(facts["child"]["same"] and facts["child"]["left"])
        self.assertEqual(facts["child"]["logs"], ["in the harness %d" % facts["pid"]])

    def test_stopped_by_someone_else(self):
        sleeper = subprocess.Popen(["sleep", "30"])
        self.addCleanup(lambda: (sleeper.kill(), sleeper.wait(WAIT)))
        wait_until(lambda: state(sleeper.pid) == b"S", "sleep to start")
        self.assertFalse(zygote.stopped_by_someone_else(sleeper.pid))
        os.kill(sleeper.pid, signal.SIGSTOP)
        wait_until(lambda: state(sleeper.pid) == b"T", "the stop")
        self.assertTrue(zygote.stopped_by_someone_else(sleeper.pid))
        os.kill(sleeper.pid, signal.SIGCONT)
        wait_until(lambda: state(sleeper.pid) == b"S", "the continue")
        self.assertFalse(zygote.stopped_by_someone_else(sleeper.pid))
        # The kit stopping itself for job control carries its own name: not someone else's stop.
        kit = python("import os, signal, sys; open('/proc/self/comm', 'wb').write(sys.argv[2].encode()); "
                     "os.kill(os.getpid(), signal.SIGSTOP)", zygote.STOP_NAME.decode())
        self.addCleanup(lambda: (kit.kill(), kit.wait(WAIT)))
        wait_until(lambda: state(kit.pid) == b"T", "the kit's own stop")
        self.assertFalse(zygote.stopped_by_someone_else(kit.pid))
        self.assertFalse(zygote.stopped_by_someone_else(2 ** 22 + 1))


SERVER = PRELUDE + r"""
import json, os, resource, subprocess
os.dup2(int(sys.argv[2]), 3)
os.close(int(sys.argv[2]))


class Runner:
    @staticmethod
    def main():
        req = os.fdopen(3, "rb")
        facts = {"line": req.readline().decode(), "cwd": os.getcwd(), "env": dict(os.environ),
                 "session_leader": os.getsid(0) == os.getpid(), "ppid": os.getppid(),
                 "stdin": os.readlink("/proc/self/fd/0"), "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
                 "nproc": list(resource.getrlimit(resource.RLIMIT_NPROC))}
        if os.environ.get("SCENARIO") == "leave":
            facts["left"] = subprocess.Popen(["sleep", "30"], start_new_session=True).pid
        os.write(4, json.dumps(facts).encode() + b"\n")
        os.write(1, b"to stdout\n")
        os.write(2, b"to stderr\n")
        os._exit(5)


zygote.serve(Runner)
"""


@unittest.skipUnless(LINUX, "the fork server is Linux only")
class Serve(unittest.TestCase):
    def setUp(self):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(WAIT)
        self.server = python(SERVER, str(theirs.fileno()), pass_fds=[theirs.fileno()], stderr=subprocess.PIPE)
        theirs.close()
        self.addCleanup(self.stop)
        self.assertEqual(self.next_message(), {"kind": "ready", "pid": self.server.pid})

    def stop(self):
        self.sock.close()
        try:
            self.server.wait(WAIT)
        finally:
            self.server.kill()
            self.server.communicate(timeout=WAIT)

    def next_message(self):
        return json.loads(self.sock.recv(zygote.MAX_MESSAGE).decode())

    def spawn(self, env, cwd):
        req, rep, out, err = os.pipe(), os.pipe(), os.pipe(), os.pipe()
        theirs = [req[0], rep[1], out[1], err[1]]
        socket.send_fds(self.sock, [json.dumps({"kind": "spawn", "env": env, "dir": cwd}).encode()], theirs)
        for fd in theirs:
            os.close(fd)
        ends = {"req": os.fdopen(req[1], "wb"), "rep": os.fdopen(rep[0], "rb"), "out": os.fdopen(out[0], "rb"),
                "err": os.fdopen(err[0], "rb")}
        for f in ends.values():
            self.addCleanup(f.close)
        return ends

    def test_a_spawned_harness_is_set_up_as_a_started_one_and_its_exit_reported(self):
        cwd = tempfile.mkdtemp(prefix="astrabox-zygote-")
        self.addCleanup(os.rmdir, cwd)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ONLY": "this", "ASTRABOX_LIMIT_NPROC": "3000"}
        ends = self.spawn(env, cwd)
        spawned = self.next_message()
        self.assertEqual(spawned["kind"], "spawned", spawned)
        ends["req"].write(b"hello\n")
        ends["req"].flush()
        facts = json.loads(ends["rep"].readline())
        self.assertEqual(facts["line"], "hello\n")
        self.assertEqual(facts["cwd"], os.path.realpath(cwd))
        self.assertEqual(facts["env"], {"PATH": env["PATH"], "ONLY": "this"})  # the limit is applied, not passed
        self.assertEqual(facts["nproc"], [3000, 3000])
        self.assertTrue(facts["session_leader"])
        self.assertEqual(facts["ppid"], self.server.pid)  # no process in between
        self.assertEqual(facts["stdin"], os.devnull)
        self.assertEqual(facts["fds"][:5], [0, 1, 2, 3, 4])
        self.assertLessEqual(len(facts["fds"]), 6)  # nothing else but the one listdir itself opened
        self.assertEqual(ends["out"].read(), b"to stdout\n")
        self.assertEqual(ends["err"].read(), b"to stderr\n")
        exits = [self.next_message(), self.next_message()]
        self.assertEqual(exits[0]["kind"], "exit")
        self.assertEqual(exits[0]["pid"], spawned["pid"])
        self.assertTrue(os.WIFEXITED(exits[0]["status"]) and os.WEXITSTATUS(exits[0]["status"]) == 5, exits[0])
        # Then its tree: gone, and the server had nothing left to kill.
        self.assertEqual(exits[1], {"kind": "gone", "pid": spawned["pid"], "drained": True})

    def test_what_a_harness_left_behind_dies_before_it_is_reported_gone(self):
        ends = self.spawn(dict(BASE_ENV, SCENARIO="leave"), "/")
        spawned = self.next_message()
        ends["req"].write(b"go\n")
        ends["req"].flush()
        left = json.loads(ends["rep"].readline())["left"]
        kinds = [self.next_message(), self.next_message()]
        self.assertEqual([(m["kind"], m["pid"]) for m in kinds], [("exit", spawned["pid"]), ("gone", spawned["pid"])])
        self.assertTrue(kinds[1]["drained"])
        # Its own session did not save it: gone before the harness was reported gone (not even a zombie: reaped).
        self.assertIsNone(state(left))

    def test_a_bad_request_is_answered_and_the_server_goes_on(self):
        self.sock.send(b"{not json")
        msg = self.next_message()
        self.assertEqual(msg["kind"], "error")
        self.assertTrue(msg["message"].startswith("bad spawn request: "), msg)
        r, w = os.pipe()
        self.addCleanup(os.close, w)
        socket.send_fds(self.sock, [json.dumps({"kind": "spawn", "env": {}, "dir": "/"}).encode()], [r])
        os.close(r)
        self.assertEqual(self.next_message(), {"kind": "error", "message": "bad spawn request: a spawn request needs "
                                                                           "four descriptors, an env object and a dir"})

    def test_the_server_ends_when_go_closes_its_socket(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.assertEqual(self.server.wait(WAIT), 0)


if __name__ == "__main__":
    unittest.main()
