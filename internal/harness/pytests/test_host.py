"""host: a harness's process setup. Core dumps off, the address-space and open-files limits from
``ASTRABOX_LIMIT_AS`` / ``ASTRABOX_LIMIT_NOFILE`` (clamped to the hard limit; a bad value is said on descriptor 2
and left alone), the temporary directory chosen again from this replica's own environment, and the developer
profile (``ASTRABOX_PROFILE_DIR``). Each changes the whole process, so each runs in a child interpreter of the
same version."""

import json
import os
import pstats
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}
POSIX = os.name == "posix"

LIMITS = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from astrabox._harness import host
before = {n: resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_CORE", "RLIMIT_AS", "RLIMIT_NOFILE")}
host.apply_limits()
after = {n: resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_CORE", "RLIMIT_AS", "RLIMIT_NOFILE")}
print(json.dumps({"before": before, "after": after}))
"""


def child(code, env=None, *args):
    full = dict(BASE_ENV, PYTHONDONTWRITEBYTECODE="1")
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-B", "-c", code, PYTHON_DIR] + list(args), env=full,
                          capture_output=True, text=True, timeout=60)
    return proc


@unittest.skipUnless(POSIX, "resource limits are POSIX")
class Limits(unittest.TestCase):
    def limits(self, env):
        proc = child(LIMITS, env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = json.loads(proc.stdout)
        return out["before"], out["after"], proc.stderr

    def test_core_dumps_are_always_off_and_nothing_else_changes_without_the_variables(self):
        before, after, err = self.limits({})
        self.assertEqual(after["RLIMIT_CORE"], [0, 0])
        self.assertEqual(after["RLIMIT_AS"], before["RLIMIT_AS"])
        self.assertEqual(after["RLIMIT_NOFILE"], before["RLIMIT_NOFILE"])
        self.assertEqual(err, "")

    def test_the_limits_go_apply_soft_and_hard(self):
        before, after, err = self.limits({"ASTRABOX_LIMIT_NOFILE": "200", "ASTRABOX_LIMIT_AS": str(8 << 30)})
        self.assertEqual(after["RLIMIT_NOFILE"], [200, 200])
        self.assertEqual(after["RLIMIT_AS"], [8 << 30, 8 << 30])
        self.assertEqual(err, "")

    def test_a_limit_above_the_hard_limit_is_clamped_to_it(self):
        before, _, _ = self.limits({})
        hard = before["RLIMIT_NOFILE"][1]
        if hard < 0:
            self.skipTest("the open-files hard limit is unlimited here")
        _, after, err = self.limits({"ASTRABOX_LIMIT_NOFILE": str(hard + 1000)})
        self.assertEqual(after["RLIMIT_NOFILE"], [hard, hard])
        self.assertEqual(err, "")

    def test_zero_negative_and_empty_values_leave_the_limit_alone(self):
        for value in ("0", "-5", ""):
            with self.subTest(value=value):
                before, after, err = self.limits({"ASTRABOX_LIMIT_NOFILE": value})
                self.assertEqual(after["RLIMIT_NOFILE"], before["RLIMIT_NOFILE"])
                self.assertEqual(err, "")

    def test_a_value_that_is_not_an_integer_is_said_and_left_alone(self):
        before, after, err = self.limits({"ASTRABOX_LIMIT_NOFILE": "lots", "ASTRABOX_LIMIT_AS": "2G"})
        self.assertEqual(after["RLIMIT_NOFILE"], before["RLIMIT_NOFILE"])
        self.assertEqual(after["RLIMIT_AS"], before["RLIMIT_AS"])
        self.assertIn("astrabox harness: ASTRABOX_LIMIT_NOFILE='lots' is not an integer; left as is\n", err)
        self.assertIn("astrabox harness: ASTRABOX_LIMIT_AS='2G' is not an integer; left as is\n", err)


BECOME_HOST = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from astrabox._harness import host
imported = "tempfile" in sys.modules
host.become_host()  # with or without tempfile imported already (a fork server may not have it)
out = {"imported": "tempfile" in sys.modules and not imported}
import tempfile
os.environ["TMPDIR"] = sys.argv[2]
out["server"] = tempfile.gettempdir()  # the fork server's own choice, cached
os.environ["TMPDIR"] = sys.argv[3]  # the replica's environment, from Go
out["cached"] = tempfile.gettempdir()
host.become_host()
out["replica"] = tempfile.gettempdir()
print(json.dumps(out))
"""


class BecomeHost(unittest.TestCase):
    def test_the_replica_chooses_its_temporary_directory_from_its_own_environment(self):
        with tempfile.TemporaryDirectory() as server, tempfile.TemporaryDirectory() as replica:
            server, replica = os.path.realpath(server), os.path.realpath(replica)
            proc = child(BECOME_HOST, {}, server, replica)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            out = json.loads(proc.stdout)
        self.assertEqual(out, {"imported": False, "server": server, "cached": server, "replica": replica})


PROFILE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from astrabox._harness import host
host.start_profile()
def provider_work_to_see_in_the_profile():
    return sum(range(1000))
provider_work_to_see_in_the_profile()
host.dump_profile()
print(os.getpid())
"""


class Profile(unittest.TestCase):
    def test_with_the_knob_a_pstats_file_per_process_holds_what_ran(self):
        with tempfile.TemporaryDirectory() as d:
            proc = child(PROFILE, {"ASTRABOX_PROFILE_DIR": d})
            self.assertEqual(proc.returncode, 0, proc.stderr)
            pid = int(proc.stdout)
            self.assertEqual(os.listdir(d), ["harness-%d.prof" % pid])
            stats = pstats.Stats(os.path.join(d, "harness-%d.prof" % pid))
            names = {func[2] for func in stats.stats}
        self.assertIn("provider_work_to_see_in_the_profile", names)

    def test_the_cpu_clock_counts_no_time_spent_asleep(self):
        sleeper = PROFILE.replace("provider_work_to_see_in_the_profile()\n", "import time; time.sleep(0.3)\n", 1)
        slept = {}
        for clock in ("wall", "cpu"):
            with tempfile.TemporaryDirectory() as d:
                env = {"ASTRABOX_PROFILE_DIR": d}
                if clock == "cpu":
                    env["ASTRABOX_PROFILE_CLOCK"] = "cpu"
                proc = child(sleeper, env)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                stats = pstats.Stats(os.path.join(d, "harness-%d.prof" % int(proc.stdout)))
                slept[clock] = sum(v[2] for k, v in stats.stats.items() if k[2] == "<built-in method time.sleep>")
        self.assertGreaterEqual(slept["wall"], 0.25)
        self.assertLess(slept["cpu"], 0.1)

    def test_without_the_knob_nothing_is_profiled(self):
        proc = child(PROFILE + "print('cProfile' in sys.modules, sys.getprofile())\n")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split()[1:], ["False", "None"])

    def test_a_directory_that_cannot_be_written_does_not_fail_the_harness(self):
        with tempfile.TemporaryDirectory() as d:
            proc = child(PROFILE, {"ASTRABOX_PROFILE_DIR": os.path.join(d, "missing")})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("Traceback", proc.stderr)


if __name__ == "__main__":
    unittest.main()
