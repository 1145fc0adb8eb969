"""sources: which code file is the provider's own, the SDK's, the standard library's or someone else's
(site-packages included, even inside the provider's project), where on a stack an observation is attributed,
and where a callable's code starts."""

import asyncio
import contextvars
import functools
import os
import subprocess
import sys
import sysconfig
import tempfile
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import sources  # noqa: E402

SDK_DIR = os.path.join(PYTHON_DIR, "astrabox")
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ASTRABOX_", "PYTHON"))}


def code_at(filename, source, name, module="mod"):
    """The function ``name`` of ``source`` compiled as if it were the file ``filename`` of module ``module``."""
    namespace = {"__name__": module}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


class Project(unittest.TestCase):
    """A provider project: its package, its source root, a virtual environment inside the project."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        base = os.path.realpath(tmp.name)
        self.root = os.path.join(base, "proj")
        self.pkg = os.path.join(self.root, "src", "acme_provider")
        self.site = os.path.join(base, "proj", ".venv", "lib", "python3", "site-packages")
        for d in (self.pkg, self.site):
            os.makedirs(d)
        self.kinds = sources.CodeKinds(SDK_DIR)
        self.kinds.set_roots([self.pkg], [self.root])
        self.base = base


class Kind(Project):
    def test_the_providers_package_and_roots_are_the_providers(self):
        self.assertEqual(self.kinds.kind(os.path.join(self.pkg, "provider.py")), sources.PROVIDER)
        self.assertEqual(self.kinds.kind(os.path.join(self.root, "helpers.py")), sources.PROVIDER)
        self.assertEqual(self.kinds.kind(os.path.join(self.root, "deep", "er", "x.py")), sources.PROVIDER)
        self.assertEqual(self.kinds.kind(os.path.join(self.root, "src", "acme_provider", "provider.py")),
                         sources.PROVIDER)
        self.assertTrue(self.kinds.is_provider_file(os.path.join(self.pkg, "provider.py")))

    def test_a_root_given_through_a_symbolic_link_holds_the_files_under_either_name(self):
        link = os.path.join(self.base, "checkout")
        os.symlink(self.root, link)
        kinds = sources.CodeKinds(SDK_DIR)
        kinds.set_roots([os.path.join(link, "src", "acme_provider") + os.sep], [link + os.sep])
        for top in (link, self.root):
            self.assertEqual(kinds.kind(os.path.join(top, "helpers.py")), sources.PROVIDER, top)
            self.assertEqual(kinds.kind(os.path.join(top, "src", "acme_provider", "p.py")), sources.PROVIDER, top)

    def test_a_sibling_whose_name_starts_like_a_root_is_not_under_it(self):
        self.assertEqual(self.kinds.kind(self.root + "2" + os.sep + "x.py"), sources.OTHER)
        kinds = sources.CodeKinds(SDK_DIR)
        kinds.set_roots([self.pkg], [])
        self.assertEqual(kinds.kind(self.pkg + "_extras" + os.sep + "x.py"), sources.OTHER)
        self.assertEqual(kinds.kind(os.path.join(self.pkg, "x.py")), sources.PROVIDER)

    def test_site_packages_inside_the_project_is_not_the_providers(self):
        lib = os.path.join(self.site, "httpx", "_client.py")
        self.assertEqual(self.kinds.kind(lib), sources.OTHER)
        self.assertEqual(self.kinds.kind(lib.replace("site-packages", "dist-packages")), sources.OTHER)
        self.assertFalse(self.kinds.is_provider_file(lib))

    def test_a_provider_package_installed_into_site_packages_is_the_providers(self):
        installed = os.path.join(self.site, "acme_provider")
        self.kinds.set_roots([installed], [self.root])
        self.assertEqual(self.kinds.kind(os.path.join(installed, "provider.py")), sources.PROVIDER)
        self.assertEqual(self.kinds.kind(os.path.join(self.site, "requests", "api.py")), sources.OTHER)

    def test_the_standard_library_and_frozen_modules(self):
        self.assertEqual(self.kinds.kind(os.__file__), sources.STDLIB)
        self.assertEqual(self.kinds.kind(asyncio.__file__), sources.STDLIB)
        self.assertEqual(self.kinds.kind("<frozen importlib._bootstrap>"), sources.STDLIB)
        self.assertEqual(self.kinds.kind("<string>"), sources.OTHER)
        self.assertEqual(self.kinds.kind(""), sources.OTHER)

    def test_the_standard_librarys_own_site_packages_is_not_the_standard_library(self):
        site = sysconfig.get_paths()["purelib"]
        self.assertEqual(self.kinds.kind(os.path.join(site, "certifi", "core.py")), sources.OTHER)

    def test_the_sdk_is_the_sdks_even_when_a_root_holds_it(self):
        self.assertEqual(self.kinds.kind(sources.__file__), sources.SDK)
        self.assertEqual(self.kinds.kind(os.path.join(SDK_DIR, "seams.py")), sources.SDK)
        self.kinds.set_roots([], [PYTHON_DIR])
        self.assertEqual(self.kinds.kind(os.path.join(SDK_DIR, "seams.py")), sources.SDK)

    def test_a_relative_file_name_is_taken_from_the_working_directory(self):
        cwd = os.getcwd()
        self.addCleanup(os.chdir, cwd)
        os.chdir(self.root)
        self.assertEqual(self.kinds.kind("helpers.py"), sources.PROVIDER)

    def test_new_roots_replace_what_was_sorted_before(self):
        kinds = sources.CodeKinds(SDK_DIR)
        path = os.path.join(self.pkg, "provider.py")
        self.assertEqual(kinds.kind(path), sources.OTHER)  # before load: no provider yet
        kinds.set_roots([self.pkg], [])
        self.assertEqual(kinds.kind(path), sources.PROVIDER)
        kinds.set_roots([], [])
        self.assertEqual(kinds.kind(path), sources.OTHER)


class StdlibDirs(unittest.TestCase):
    def test_holds_the_directory_of_os(self):
        self.assertIn(os.path.dirname(os.__file__), sources.stdlib_dirs())

    def test_sysconfigs_caches_are_left_as_they_were(self):
        # In a fresh interpreter: what stdlib_dirs computes from this environment must not stay behind in
        # sysconfig for a provider that asks later (a forked replica has its own HOME).
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import sysconfig\n"
                "names = ('_CONFIG_VARS', '_USER_BASE')\n"
                "before = {n: repr(getattr(sysconfig, n, 'absent')) for n in names}\n"
                "from astrabox._harness import sources\n"
                "dirs = sources.stdlib_dirs()\n"
                "after = {n: repr(getattr(sysconfig, n, 'absent')) for n in names}\n"
                "print(before == after, before['_CONFIG_VARS'] == 'None', bool(dirs))\n")
        proc = subprocess.run([sys.executable, "-B", "-c", code, PYTHON_DIR], capture_output=True, text=True,
                              env=dict(BASE_ENV, PYTHONDONTWRITEBYTECODE="1"), timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        same, fresh, some = proc.stdout.split()
        self.assertEqual((same, some), ("True", "True"), proc.stdout)
        if fresh != "True":
            self.skipTest("sysconfig's configuration was computed before the harness ran (nothing to leave behind)")


PROVIDER_SRC = """

def handler(callback):
    return callback()  # line 4
"""

LIBRARY_SRC = """
def request(callback):
    return callback()  # line 3
"""

OPENER_SRC = """
def opener(callback):
    return callback()  # line 3
"""


class Locate(Project):
    def setUp(self):
        super().setUp()
        self.handler = code_at(os.path.join(self.pkg, "provider.py"), PROVIDER_SRC, "handler", "acme_provider.provider")
        self.request = code_at(os.path.join(self.site, "httpx", "_client.py"), LIBRARY_SRC, "request", "httpx._client")

    def test_the_innermost_provider_frame_wins_over_library_frames(self):
        frame = self.handler(lambda: self.request(lambda: sys._getframe(0)))
        where = self.kinds.locate("socket.connect", frame)
        self.assertEqual(where, sources.Location(os.path.join(self.pkg, "provider.py"), 4, "handler"))
        self.assertEqual(sources.own_location(self.kinds, frame), where)

    def test_without_a_provider_frame_the_innermost_third_party_frame(self):
        frame = self.request(lambda: sys._getframe(1))  # the library's frame, above this test's own
        self.assertEqual(self.kinds.locate("socket.connect", frame),
                         sources.Location(os.path.join(self.site, "httpx", "_client.py"), 3, "request"))
        self.assertEqual(sources.own_location(self.kinds, frame), sources.NOWHERE)

    def test_nothing_but_the_kit_and_the_standard_library_is_nowhere(self):
        # This test's own files play the kit here, so that the whole stack is the kit's or the standard library's.
        here = os.path.dirname(os.path.abspath(__file__))
        kinds = sources.CodeKinds(here)
        kinds.set_roots([self.pkg], [])
        frame = code_at(os.path.join(here, "kit.py"), LIBRARY_SRC, "request")(
            lambda: sys._getframe(1))
        self.assertEqual(kinds.kind(frame.f_code.co_filename), sources.SDK)
        self.assertEqual(kinds.locate("open", frame), sources.NOWHERE)
        self.assertEqual(sources.own_location(kinds, frame), sources.NOWHERE)

    def test_an_import_or_source_lookup_opening_a_file_is_not_attributed(self):
        stdlib = os.path.dirname(os.__file__)
        for module in ("importlib._bootstrap_external", "linecache", "tokenize"):
            opener = code_at(os.path.join(stdlib, module.replace(".", os.sep) + ".py"), OPENER_SRC, "opener", module)
            frame = self.handler(lambda: opener(lambda: sys._getframe(1)))  # the opener's frame itself
            with self.subTest(module=module):
                self.assertIsNone(self.kinds.locate("open", frame))
                # Another event, or the same module deeper than the innermost standard-library frames: kept.
                self.assertEqual(self.kinds.locate("socket.connect", frame).line, 4)
        json_opener = code_at(os.path.join(stdlib, "json", "__init__.py"), OPENER_SRC, "opener", "json")
        frame = self.handler(lambda: json_opener(lambda: sys._getframe(1)))
        self.assertEqual(self.kinds.locate("open", frame).file, os.path.join(self.pkg, "provider.py"))

    def test_a_provider_frame_below_an_opener_is_not_an_import(self):
        stdlib = os.path.dirname(os.__file__)
        opener = code_at(os.path.join(stdlib, "linecache.py"), OPENER_SRC, "opener", "linecache")
        # linecache calls back into provider code, which opens a file: that open is the provider's.
        frame = opener(lambda: self.handler(lambda: sys._getframe(1)))
        self.assertEqual(self.kinds.locate("open", frame).line, 4)


def plain(a, b=1):
    return a + b


class Job:
    def method(self):
        return 1


class CodeLocation(unittest.TestCase):
    def test_through_partials_bound_methods_and_wrappers(self):
        first = plain.__code__.co_firstlineno
        self.assertEqual(sources.code_location(plain), (__file__, first))
        self.assertEqual(sources.code_location(functools.partial(functools.partial(plain, 1), b=2)), (__file__, first))
        self.assertEqual(sources.code_location(Job().method), (__file__, Job.method.__code__.co_firstlineno))

        @functools.wraps(plain)
        def wrapper(*args, **kwargs):
            return plain(*args, **kwargs)

        self.assertEqual(sources.code_location(wrapper), (__file__, first))

    def test_code_without_a_python_function_is_unknown(self):
        self.assertEqual(sources.code_location(os.getpid), (None, None))
        self.assertEqual(sources.code_location(42), (None, None))

        class Exploding:
            def __getattr__(self, name):
                raise SystemExit("provider object exits on attribute access")

        self.assertEqual(sources.code_location(Exploding()), (None, None))

    def test_unwrap_job_sees_through_to_thread_and_context_run(self):
        ctx = contextvars.copy_context()
        # asyncio.to_thread: loop.run_in_executor(None, functools.partial(ctx.run, func, *args))
        self.assertIs(sources.unwrap_job(functools.partial(ctx.run, plain, 1), ()), plain)
        # executor.submit(ctx.run, func, arg)
        self.assertIs(sources.unwrap_job(ctx.run, (plain, 1)), plain)
        self.assertIs(sources.unwrap_job(plain, (1,)), plain)
        other = functools.partial(plain, 1)
        self.assertIs(sources.unwrap_job(other, ()), other)


if __name__ == "__main__":
    unittest.main()
