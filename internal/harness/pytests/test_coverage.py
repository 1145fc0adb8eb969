"""coverage: the static facts of a measured file (executable lines, branch points, functions, their cache) and
the lines and branches each key ran. Measuring installs a process-wide trace function or sys.monitoring tool
and an audit hook that cannot be removed, so the runs of ``Coverage.start`` happen in a child interpreter of
the same version; the static facts are checked here directly."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import coverage  # noqa: E402
from astrabox._harness.coverage import Coverage, FileInfo  # noqa: E402

MONITORING = sys.version_info >= (3, 12)

SOURCE = """\
def choose(x):
    if x:
        return 1
    return 2


class Holder:
    def method(self):
        for _ in ():
            pass
        return 3
"""


class Temp(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="astrabox-cov-")
        self.addCleanup(shutil.rmtree, self.root, True)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path


class Facts(Temp):
    def test_lines_functions_and_branches(self):
        info = FileInfo(self.write("mod.py", SOURCE))
        self.assertIsNone(info.error)
        # A def's own line belongs to the code that defines it (the module, the class body).
        self.assertEqual(info.lines, [1, 2, 3, 4, 7, 8, 9, 10, 11])
        self.assertEqual(info.functions, [["choose", 1, 4], ["Holder.method" if MONITORING or sys.version_info >= (3, 11)
                                                             else "method", 8, 11]])
        if MONITORING:
            self.assertEqual(info.branches, [2, 9])  # the if and the for
        else:
            self.assertEqual(info.branches, [])  # branches are measured on 3.12+ only
        self.assertEqual(info.wire(), {"lines": info.lines, "branches": info.branches, "functions": info.functions})

    def test_a_with_blocks_way_out_is_not_a_branch(self):
        info = FileInfo(self.write("with.py", "def f(lock):\n    with lock:\n        return 1\n"))
        self.assertEqual(info.branches, [])

    def test_unreadable_and_invalid_files_say_why(self):
        missing = FileInfo(os.path.join(self.root, "gone.py"))
        self.assertTrue(missing.error.startswith("FileNotFoundError: "), missing.error)
        self.assertEqual(missing.wire()["error"], missing.error)
        bad = FileInfo(self.write("bad.py", "def f(:\n"))
        self.assertTrue(bad.error.startswith("SyntaxError: "), bad.error)
        self.assertEqual(bad.lines, [])

    def test_facts_are_cached_by_source_hash(self):
        cache = os.path.join(self.root, "cache")
        path = self.write("mod.py", SOURCE)
        with mock.patch.dict(os.environ, {"ASTRABOX_PYCACHE": cache}):
            first = FileInfo(path)
            cached = coverage._facts_path(path)
            self.assertTrue(cached.startswith(cache + os.sep), cached)
            with open(cached) as fh:
                data = json.load(fh)
            self.assertEqual(data["lines"], first.lines)
            # A cache entry is used as it is (so a doctored one shows it was read)...
            data["lines"] = [99]
            with open(cached, "w") as fh:
                json.dump(data, fh)
            self.assertEqual(FileInfo(path).lines, [99])
            # Code without a branch point has no table in the cache: found empty either way.
            self.assertEqual(FileInfo(path).points, {k: t for k, t in first.points.items() if t})
            # ...but never for a source that changed since, nor when it is unreadable.
            self.write("mod.py", SOURCE + "x = 1\n")
            self.assertEqual(FileInfo(path).lines[-1], 12)
            with open(cached, "w") as fh:
                fh.write("{not json")
            self.assertEqual(FileInfo(path).lines[-1], 12)
        with mock.patch.dict(os.environ, {"ASTRABOX_PYCACHE": "relative/dir"}):
            self.assertEqual(coverage._facts_path(path), "")


class Own(Temp):
    def test_include_and_omit_relative_to_the_root(self):
        cov = Coverage(lambda f: f.startswith(self.root), None)
        cov.root = self.root
        prov = os.path.join(self.root, "pkg", "a.py")
        self.assertTrue(cov.own(prov))
        self.assertFalse(cov.own("<string>"))
        self.assertFalse(cov.own(""))
        self.assertFalse(cov.own("/usr/lib/python3/x.py"))
        cov.include, cov.omit = ["pkg/*"], ["pkg/gen_*.py"]
        self.assertTrue(cov.own(prov))
        self.assertFalse(cov.own(os.path.join(self.root, "pkg", "gen_a.py")))
        self.assertFalse(cov.own(os.path.join(self.root, "other", "b.py")))

    def test_off_until_started(self):
        cov = Coverage(lambda f: True, None)
        for opts in (None, {}, {"enabled": False}, "yes"):
            cov.start(opts, self.root)
        self.assertEqual(cov.mode, "")
        cov.begin("plan")
        self.assertIsNone(cov.take())


CHILD = r"""
import contextlib, importlib, json, sys
sys.path.insert(0, sys.argv[1])
root = sys.argv[2]
sys.path.insert(0, root)
from astrabox._harness.coverage import Coverage
scenario = sys.argv[3]
if scenario == "no-tool-id":
    for tool in (3, 4):
        sys.monitoring.use_tool_id(tool, "someone else")
cov = Coverage(lambda f: f.startswith(root), contextlib.nullcontext)
cov.start({"enabled": True, "omit": ["skipped.py"], "include": [7]}, root)
mod = importlib.import_module("mod")
importlib.import_module("skipped")
out = []
cov.begin("plan")
mod.choose(True)
if scenario == "others":
    if cov.mode == "monitoring":
        sys.monitoring.use_tool_id(0, "provider debugger")
    else:
        sys.settrace(None)
out.append(cov.take())
cov.begin("prepare_turn")
mod.choose(True)
mod.choose(False)
mod.Holder().method()
out.append(cov.take())
print(json.dumps(out))
"""


class Measure(Temp):
    def measure(self, scenario):
        self.mod = self.write("mod.py", SOURCE)
        self.write("skipped.py", "def unused():\n    return 0\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}
        proc = subprocess.run([sys.executable, "-B", "-c", CHILD, PYTHON_DIR, self.root, scenario], env=env,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout)

    def test_each_key_gets_the_lines_and_branches_it_ran(self):
        first, second = self.measure("plain")
        mode = "monitoring" if MONITORING else "trace"
        self.assertEqual((first["mode"], first["branches"]), (mode, MONITORING))
        self.assertEqual(list(first["files"]), [self.mod])  # skipped.py is omitted: never measured
        self.assertEqual(first["files"][self.mod]["lines"], [1, 2, 3, 4, 7, 8, 9, 10, 11])
        hits = {h["key"]: h for h in first["hits"]}
        self.assertEqual(hits["load"]["lines"], {self.mod: [1, 7, 8]})
        self.assertEqual(hits["plan"]["lines"], {self.mod: [2, 3]})
        self.assertEqual(hits["plan"]["branches"], {self.mod: [0]} if MONITORING else {})
        self.assertNotIn("notes", first)
        # The next reply: no file again, and the lines prepare_turn ran, re-armed although plan ran them.
        self.assertEqual(second["files"], {})
        self.assertEqual([h["key"] for h in second["hits"]], ["prepare_turn"])
        self.assertEqual(second["hits"][0]["lines"], {self.mod: [2, 3, 4, 9, 11]})
        if MONITORING:
            # Both directions of the if (0: fell through, 1: jumped) and the for's exit only.
            self.assertEqual(second["hits"][0]["branches"], {self.mod: [0, 1, 3]})

    def test_another_tracer_or_tool_is_noted(self):
        first, second = self.measure("others")
        if MONITORING:
            self.assertEqual(first["notes"], ["the provider uses sys.monitoring tool id 0 (provider debugger) too; "
                                              "the kit's coverage keeps working beside it"])
            self.assertEqual(second["hits"][0]["lines"], {self.mod: [2, 3, 4, 9, 11]})
        else:
            self.assertEqual(first["notes"], ["the provider replaced the trace function (sys.settrace); lines it ran "
                                              "after that were not measured"])
        self.assertNotIn("notes", second)  # each note once

    @unittest.skipUnless(MONITORING, "sys.monitoring is 3.12+")
    def test_no_free_tool_id(self):
        first, _ = self.measure("no-tool-id")
        self.assertEqual(first["mode"], "")
        self.assertEqual(first["notes"], ["no sys.monitoring tool id was free (3 and 4 are taken): coverage was "
                                          "not measured"])


if __name__ == "__main__":
    unittest.main()
