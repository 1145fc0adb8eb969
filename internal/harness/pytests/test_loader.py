"""loader: ``load`` imports the target, describes it (where it is, its name and what is wrong with it, which
callbacks it overrides and where) and instantiates it once. Each test writes the provider a real author
would write into a temporary project under a module name of its own, and removes it from ``sys.modules``
and ``sys.path`` afterwards."""

import itertools
import os
import shutil
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

import astrabox  # noqa: E402
from astrabox import seams  # noqa: E402
from astrabox._harness import loader  # noqa: E402
from astrabox._harness.contexts import ArgumentError  # noqa: E402
from astrabox._harness.observe import Observer  # noqa: E402

SDK_DIR = os.path.dirname(os.path.abspath(astrabox.__file__))
_serial = itertools.count()


class Project(unittest.TestCase):
    """A temporary project with a package of a unique name."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="astrabox-loader-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.pkg = "ldprov%d_%d" % (os.getpid(), next(_serial))
        os.makedirs(os.path.join(self.root, self.pkg))
        self.write("__init__.py", "")
        path_before = list(sys.path)

        def restore():
            sys.path[:] = path_before
            for name in [n for n in sys.modules if n == self.pkg or n.startswith(self.pkg + ".")]:
                del sys.modules[name]

        self.addCleanup(restore)
        self.observer = Observer(SDK_DIR)

    def write(self, rel, text):
        path = os.path.join(self.root, self.pkg, rel)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(textwrap.dedent(text))
        return path

    def load(self, target, **extra):
        args = {"target": "%s.%s" % (self.pkg, target), "paths": [self.root]}
        args.update(extra)
        return loader.load(args, self.observer)


GOOD = '''\
import functools

from astrabox.seams import RuntimeMaterials, RuntimePreparationPlan, RuntimePreparationProvider


def logged(fn):
    @functools.wraps(fn)
    async def wrapper(self, **kwargs):
        return await fn(self, **kwargs)
    return wrapper


class Enterprise(RuntimePreparationProvider):
    name = "enterprise"

    def plan(self, *, config):
        return RuntimePreparationPlan()

    @logged
    async def prepare_session(self, *, context):
        return RuntimeMaterials()

    @staticmethod
    async def recover(*, operation):
        return True
'''


class Load(Project):
    def test_a_provider_class_is_described_and_instantiated(self):
        path = self.write("prov.py", GOOD)
        loaded = self.load("prov:Enterprise")
        v = loaded.value
        self.assertEqual(type(loaded.instance).__name__, "Enterprise")
        self.assertEqual(v["module_file"], path)
        self.assertEqual((v["qualname"], v["file"], v["line"]), ("Enterprise", path, 13))
        self.assertEqual((v["is_class"], v["is_subclass"], v["instantiated"]), (True, True, True))
        self.assertEqual((v["name"], v["name_is_classattr"], v["name_error"]), ("enterprise", True, None))
        self.assertEqual(v["provider_roots"], [os.path.join(self.root, self.pkg), self.root])
        m = v["methods"]
        self.assertEqual(m["plan"], {"overridden": True, "async": False, "file": path, "line": 16})
        # A decorated coroutine is found through functools.wraps: its own code (the wrapper is in the same file,
        # at line 7), whose first line is its decorator's.
        self.assertEqual(m["prepare_session"], {"overridden": True, "async": True, "file": path, "line": 19})
        self.assertEqual(m["recover"], {"overridden": True, "async": True, "file": path, "line": 23})
        base_file = os.path.join(SDK_DIR, "seams.py")
        self.assertEqual(m["prepare_turn"]["overridden"], False)
        self.assertTrue(m["prepare_turn"]["async"])
        self.assertEqual(m["prepare_turn"]["file"], base_file)
        self.assertEqual(set(m), set(loader.METHODS))

    def test_a_method_that_is_not_callable(self):
        self.write("prov.py", '''\
            from astrabox.seams import RuntimePreparationProvider

            class P(RuntimePreparationProvider):
                name = "p"
                plan = 3
            ''')
        m = self.load("prov:P").value["methods"]["plan"]
        self.assertEqual(m, {"overridden": True, "async": False, "file": None, "line": None,
                             "problem": "plan is a int, not a method"})

    def test_name_mistakes(self):
        self.write("names.py", '''\
            from astrabox.seams import RuntimePreparationProvider

            class OnInstance(RuntimePreparationProvider):
                def __init__(self):
                    self.name = "inst"

            class AsProperty(RuntimePreparationProvider):
                @property
                def name(self):
                    return "prop"

            class Missing(RuntimePreparationProvider):
                pass

            class Empty(RuntimePreparationProvider):
                name = ""

            class Invalid(RuntimePreparationProvider):
                name = "Not Valid!"

            class Inherited(RuntimePreparationProvider):
                name = "base-name"

            class Child(Inherited):
                pass
            ''')
        cases = {
            "OnInstance": ("inst", False, "name 'inst' is set on the instance, not as a class attribute; declare "
                                          "`name = 'inst'` in the class body"),
            "AsProperty": ("prop", False, "name is a property on the class (a property or method?); it must be a "
                                          "plain str class attribute"),
            "Missing": ("", False, "name is not set; add a class attribute such as `name = \"enterprise\"`"),
            "Empty": ("", True, "name is empty; set a non-empty class attribute such as `name = \"enterprise\"`"),
            "Invalid": ("Not Valid!", True, "name 'Not Valid!' does not match [a-z0-9][a-z0-9._-]{0,62}"),
            "Child": ("base-name", True, None),
        }
        for cls, (name, classattr, error) in cases.items():
            with self.subTest(cls=cls):
                v = self.load("names:" + cls).value
                self.assertEqual((v["name"], v["name_is_classattr"], v["name_error"]), (name, classattr, error))

    def test_a_target_that_is_not_a_subclass_is_described_not_instantiated(self):
        self.write("plain.py", '''\
            class Plain:
                name = "plain"

            def factory():
                return Plain()
            ''')
        v = self.load("plain:Plain").value
        self.assertEqual((v["is_class"], v["is_subclass"], v["instantiated"]), (True, False, False))
        v = self.load("plain:factory").value
        self.assertEqual((v["is_class"], v["qualname"], v["line"]), (False, "factory", 4))

    def test_import_and_constructor_failures_are_the_providers(self):
        self.write("broken.py", "import no_such_module_for_astrabox_tests\n")
        with self.assertRaises(ModuleNotFoundError):
            self.load("broken:P")
        self.write("ctor.py", '''\
            from astrabox.seams import RuntimePreparationProvider

            class P(RuntimePreparationProvider):
                name = "p"

                def __init__(self):
                    raise RuntimeError("no config")
            ''')
        with self.assertRaisesRegex(RuntimeError, "no config"):
            self.load("ctor:P")
        self.write("attrs.py", "class P:\n    pass\n")
        with self.assertRaises(AttributeError) as cm:
            self.load("attrs:P.inner")
        self.assertIn("has no attribute 'inner' (entry point %s.attrs:P.inner)" % self.pkg, str(cm.exception))

    def test_bad_arguments(self):
        for args, msg in (
            ("x", "args must be an object"),
            ({"target": "a:b", "paths": "notalist"}, "args.paths must be a list of strings"),
            ({"target": "a:b", "paths": [1]}, "args.paths must be a list of strings"),
            ({"target": "nocolon"}, "target 'nocolon' must look like 'package.module:Attribute'"),
            ({"target": ":Attr"}, "target ':Attr' must look like 'package.module:Attribute'"),
            ({"target": "mod:"}, "target 'mod:' must look like 'package.module:Attribute'"),
            ({"target": None}, "target None must look like 'package.module:Attribute'"),
        ):
            with self.subTest(args=args):
                with self.assertRaises(ArgumentError) as cm:
                    loader.load(args, self.observer)
                self.assertEqual(str(cm.exception), msg)

    def test_paths_go_first_once_and_site_dirs_are_never_roots(self):
        self.write("prov.py", GOOD)
        site = os.path.join(self.root, "lib", "site-packages")
        sys.path.append(self.root)
        v = self.load("prov:Enterprise", paths=[self.root, site]).value
        self.assertEqual(sys.path[:2], [self.root, site])
        self.assertEqual(sys.path.count(self.root), 1)
        self.assertNotIn(site, v["provider_roots"])


class Helpers(unittest.TestCase):
    def test_site_dirs(self):
        self.assertTrue(loader._is_site_dir("/usr/lib/python3/dist-packages/x"))
        self.assertTrue(loader._is_site_dir("/venv/lib/python3.11/site-packages"))
        self.assertFalse(loader._is_site_dir("/work/my-site-packages-notes"))

    def test_class_line_found_cheaply_or_not_at_all(self):
        tmp = tempfile.mkdtemp(prefix="astrabox-loader-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "two.py")
        with open(path, "w") as fh:
            fh.write("import sys\nif sys:\n    class Dup:\n        pass\nelse:\n    class Dup:\n        pass\n"
                     "class Once:\n    pass\nclass OnceMore:\n    pass\n")
        cls = type("Dup", (), {})  # no __firstlineno__: the file is searched
        self.assertIsNone(loader._class_line(cls, path))
        self.assertEqual(loader._class_line(type("Once", (), {}), path), 8)  # not OnceMore's line
        marked = type("Marked", (), {"__firstlineno__": 42})
        self.assertEqual(loader._class_line(marked, "/nonexistent.py"), 42)

    def test_provider_pkg_dir(self):
        self.assertIsNone(loader.provider_pkg_dir("not_imported_anywhere_xyz.sub"))
        self.assertEqual(loader.provider_pkg_dir("astrabox._harness"), SDK_DIR)
        import unittest as single  # a package: its directory
        self.assertEqual(loader.provider_pkg_dir("unittest.case"), os.path.dirname(os.path.abspath(single.__file__)))

    def test_base_locations_are_the_sdks(self):
        locs = loader.base_locations()
        self.assertEqual(set(locs), set(loader.METHODS))
        for method, (file, line) in locs.items():
            self.assertEqual(file, os.path.join(SDK_DIR, "seams.py"))
            self.assertEqual(line, getattr(seams.RuntimePreparationProvider, method).__code__.co_firstlineno)


if __name__ == "__main__":
    unittest.main()
