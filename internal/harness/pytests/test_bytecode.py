"""bytecode: the provider's own modules are compiled once into the kit's cache (``ASTRABOX_PYCACHE``), in the
hash-checked pyc format; the cached code is used only while the source's hash matches, so an edit is never
hidden by a stale cache; other modules are left to the ordinary finders; nothing is written into the project;
a cache that cannot be read or written never stops an import."""

import contextlib
import importlib
import importlib.util
import marshal
import os
import sys
import tempfile
import unittest
from unittest import mock

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox._harness import bytecode  # noqa: E402


class Quiet:
    """Stands in for the observer's ``quiet``: counts how often the harness's own file access was hidden."""

    def __init__(self):
        self.entered = 0

    @contextlib.contextmanager
    def __call__(self):
        self.entered += 1
        yield


class FinderFromEnvironment(unittest.TestCase):
    def test_only_an_absolute_cache_directory_gives_a_finder(self):
        quiet = Quiet()
        for value in (None, "", "relative/cache"):
            env = {k: v for k, v in os.environ.items() if k != "ASTRABOX_PYCACHE"}
            if value is not None:
                env["ASTRABOX_PYCACHE"] = value
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertIsNone(bytecode.finder(lambda f: True, quiet), value)
        with mock.patch.dict(os.environ, {"ASTRABOX_PYCACHE": "/abs/cache"}):
            finder = bytecode.finder(lambda f: True, quiet)
        self.assertIsInstance(finder, bytecode.Finder)
        self.assertEqual(finder.cache_dir, "/abs/cache")


class Cache(unittest.TestCase):
    counter = 0

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        base = os.path.realpath(tmp.name)
        self.src = os.path.join(base, "src")
        self.cache = os.path.join(base, "cache")
        self.other = os.path.join(base, "other")
        os.makedirs(self.src)
        os.makedirs(self.other)
        Cache.counter += 1
        self.name = "bytecode_prov_%d_%d" % (os.getpid(), Cache.counter)
        self.lib = "bytecode_lib_%d_%d" % (os.getpid(), Cache.counter)
        self.quiet = Quiet()
        self.finder = bytecode.Finder(self.cache, lambda f: f.startswith(self.src + os.sep), self.quiet)
        for d in (self.src, self.other):
            sys.path.insert(0, d)
            self.addCleanup(sys.path.remove, d)
        self.addCleanup(self.forget)

    def forget(self):
        for name in (self.name, self.lib):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()

    def write(self, directory, name, text):
        path = os.path.join(directory, name + ".py")
        with open(path, "w") as fh:
            fh.write(text)
        return path

    def load(self, name):
        """Import ``name`` afresh with the finder in place, as ``load`` does."""
        self.forget()
        sys.meta_path.insert(0, self.finder)
        try:
            return importlib.import_module(name)
        finally:
            sys.meta_path.remove(self.finder)

    def cached(self, source):
        return os.path.join(self.cache, "provider", sys.implementation.cache_tag,
                            os.path.abspath(source).lstrip(os.sep) + ".pyc")

    def test_the_providers_module_is_cached_as_a_hash_checked_pyc_outside_the_project(self):
        path = self.write(self.src, self.name, "VALUE = 1\n")
        module = self.load(self.name)
        self.assertEqual(module.VALUE, 1)
        self.assertEqual(module.__file__, path)
        self.assertIsInstance(module.__spec__.loader, importlib.machinery.SourceFileLoader)
        with open(self.cached(path), "rb") as fh:
            blob = fh.read()
        with open(path, "rb") as fh:
            source = fh.read()
        self.assertEqual(blob[:4], importlib.util.MAGIC_NUMBER)
        self.assertEqual(int.from_bytes(blob[4:8], "little"), 0b11)  # hash-based, checked against the source
        self.assertEqual(blob[8:16], importlib.util.source_hash(source))
        self.assertEqual(os.listdir(self.src), [self.name + ".py"])  # nothing written into the project
        self.assertGreater(self.quiet.entered, 0)  # the harness's own cache access is not the provider's I/O

    def test_the_cached_code_is_used_while_the_source_hash_matches(self):
        path = self.write(self.src, self.name, "VALUE = 1\n")
        self.load(self.name)
        # Put other code under the same source hash: what the module runs now proves where it came from.
        with open(self.cached(path), "rb") as fh:
            header = fh.read()[:16]
        with open(self.cached(path), "wb") as fh:
            fh.write(header + marshal.dumps(compile("VALUE = 'from the cache'\n", path, "exec")))
        self.assertEqual(self.load(self.name).VALUE, "from the cache")

    def test_an_edit_is_never_hidden_by_the_cache(self):
        path = self.write(self.src, self.name, "VALUE = 1\n")
        self.load(self.name)
        stat = os.stat(path)
        self.write(self.src, self.name, "VALUE = 2\n")  # same size, same modification time
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        self.assertEqual(self.load(self.name).VALUE, 2)
        with open(self.cached(path), "rb") as fh:
            self.assertEqual(fh.read()[8:16], importlib.util.source_hash(b"VALUE = 2\n"))

    def test_a_damaged_cache_file_is_compiled_again(self):
        path = self.write(self.src, self.name, "VALUE = 3\n")
        os.makedirs(os.path.dirname(self.cached(path)))
        for damage in (b"", b"junk", importlib.util.MAGIC_NUMBER + b"\x03\x00\x00\x00",
                       importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little")
                       + importlib.util.source_hash(b"VALUE = 3\n") + b"\xff\x00not marshal"):
            with open(self.cached(path), "wb") as fh:
                fh.write(damage)
            with self.subTest(damage=damage):
                self.assertEqual(self.load(self.name).VALUE, 3)
                with open(self.cached(path), "rb") as fh:
                    self.assertEqual(marshal.loads(fh.read()[16:]).co_filename, path)

    def test_a_cache_that_cannot_be_written_is_simply_not_used(self):
        with open(self.cache, "w") as fh:
            fh.write("a file where the cache directory should be")
        self.write(self.src, self.name, "VALUE = 4\n")
        self.assertEqual(self.load(self.name).VALUE, 4)
        self.assertEqual(self.load(self.name).VALUE, 4)

    def test_modules_that_are_not_the_providers_are_left_to_the_ordinary_finders(self):
        self.write(self.other, self.lib, "VALUE = 5\n")
        self.assertIsNone(self.finder.find_spec(self.lib))
        self.assertEqual(self.load(self.lib).VALUE, 5)
        self.assertFalse(os.path.exists(self.cache))
        self.assertIsNone(self.finder.find_spec("json"))  # the standard library
        self.assertIsNone(self.finder.find_spec("no_such_module_anywhere_%d" % os.getpid()))


if __name__ == "__main__":
    unittest.main()
