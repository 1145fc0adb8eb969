"""values: provider objects become protocol JSON, and no provider object (a raising repr, a cycle, a non-finite
float, a mapping whose methods raise) makes the harness crash or lie about a type."""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox import seams  # noqa: E402
from astrabox._harness import values  # noqa: E402


class Raising:
    def __repr__(self):
        raise SystemExit("repr of a provider object exits")

    def __str__(self):
        raise KeyboardInterrupt


class NotStr:
    def __repr__(self):
        return 42

    def __str__(self):
        return b"bytes"


class RaisingMapping(dict):
    def items(self):
        raise RuntimeError("items raises")

    def get(self, key, default=None):
        raise RuntimeError("get raises")


class Text(unittest.TestCase):
    def test_truncate_says_how_much_was_cut(self):
        self.assertEqual(values.truncate("abc", 3), "abc")
        self.assertEqual(values.truncate("abcdef", 2), "ab... [4 characters truncated]")

    def test_truncate_middle_keeps_head_and_tail(self):
        text = "HEAD" + "x" * 100 + "TAIL"
        out = values.truncate_middle(text, 8)
        self.assertTrue(out.startswith("HEAD"))
        self.assertTrue(out.endswith("TAIL"))
        self.assertIn("[100 characters truncated]", out)
        self.assertEqual(values.truncate_middle("short", 8), "short")
        # An odd limit: the characters said to be cut are exactly the ones missing.
        out = values.truncate_middle("z" * 10, 5)
        self.assertEqual(out.count("z"), 4)
        self.assertIn("[6 characters truncated]", out)

    def test_safe_repr_and_str_survive_raising_and_wrong_types(self):
        self.assertEqual(values.safe_repr(Raising()), "<test_values.Raising object; repr() raised SystemExit>")
        self.assertEqual(values.safe_str(Raising()), "<str() raised KeyboardInterrupt>")
        self.assertEqual(values.safe_repr(NotStr()), "<test_values.NotStr object; repr() raised TypeError>")
        self.assertEqual(values.safe_str(NotStr()), "<str() raised TypeError>")
        self.assertEqual(values.safe_repr("x" * 10, 4), "'xxx... [8 characters truncated]")

    def test_names(self):
        self.assertEqual(values.type_name(int), "int")
        self.assertEqual(values.type_name(Raising), "test_values.Raising")
        self.assertEqual(values.type_name(object()), "?")  # an instance, not a type: no qualname

        class Weird:
            __module__ = 7  # not a str: shown without it

        self.assertEqual(values.type_name(Weird), "Text.test_names.<locals>.Weird")
        import functools

        self.assertEqual(values.callable_name(functools.partial(functools.partial(os.getpid))), "posix.getpid")
        self.assertEqual(values.callable_name(Text.test_names), "test_values.Text.test_names")
        self.assertEqual(values.callable_name(3), "int")  # no qualname: its type's name

        class Boom:
            def __getattr__(self, name):
                raise SystemExit

            @property
            def __module__(self):
                raise SystemExit

        self.assertEqual(values.callable_name(Boom()), "?")


class Jsonsafe(unittest.TestCase):
    def test_scalars_and_non_finite_floats(self):
        self.assertEqual(values.jsonsafe(None), None)
        self.assertIs(values.jsonsafe(True), True)
        self.assertEqual(values.jsonsafe(3), 3)
        self.assertEqual(values.jsonsafe(float("nan")), "nan")
        self.assertEqual(values.jsonsafe(float("-inf")), "-inf")
        self.assertEqual(values.jsonsafe(1.5), 1.5)

    def test_containers_keys_and_unknown_objects(self):
        out = values.jsonsafe({"a": (1, [2]), 3: Raising()})
        self.assertEqual(out["a"], [1, [2]])
        self.assertEqual(out["3"], "<test_values.Raising object; repr() raised SystemExit>")
        self.assertEqual(len(values.jsonsafe(list(range(5000)))), 1000)

    def test_a_cycle_ends_at_the_depth_bound(self):
        cyc = []
        cyc.append(cyc)
        out = values.jsonsafe(cyc)
        depth = 0
        while isinstance(out, list):
            out, depth = out[0], depth + 1
        self.assertEqual(out, "<nested too deep>")
        self.assertEqual(depth, values._MAX_DEPTH)

    def test_a_mapping_that_raises(self):
        self.assertEqual(values.jsonsafe(RaisingMapping(a=1)), "<unrepresentable test_values.RaisingMapping>")


class StrictJson(unittest.TestCase):
    def test_exact_conversion(self):
        self.assertEqual(values.strict_json({"a": (1, 2.5, None, True, "s")}), {"a": [1, 2.5, None, True, "s"]})

    def test_errors_say_where_and_why(self):
        cases = [
            ({"a": [1, float("inf")]}, "declaration['a'][1] is inf, which JSON cannot hold"),
            ({"a": {1: "x"}}, "declaration['a'] has a int key 1; keys must be str"),
            ({"a": {1, 2}}, "declaration['a'] (of type set) is not JSON-serialisable"),
        ]
        for obj, want in cases:
            with self.subTest(want=want):
                with self.assertRaises(values.DeclarationError) as cm:
                    values.strict_json(obj)
                self.assertEqual(str(cm.exception), want)
        cyc = {}
        cyc["self"] = cyc
        with self.assertRaisesRegex(values.DeclarationError, r"nested more than 64 levels deep \(a cycle\?\)"):
            values.strict_json(cyc)

    def test_plans_fast_path_gives_the_general_paths_value(self):
        # encode_value takes a shortcut for a well-formed plan; its value must be the one Result makes, key for
        # key and in the same order, for valid and invalid declarations alike.
        plans = [
            seams.RuntimePreparationPlan(session_bound=True, declaration={"format": 1, "packages": [{"n": 1.5}], "t": (1,)}),
            seams.RuntimePreparationPlan(session_bound=False, declaration={"a": [1, float("nan")]}),
            seams.RuntimePreparationPlan(session_bound=False, declaration={"a": {2: "x"}}),
            seams.RuntimePreparationPlan(session_bound=True, declaration=RaisingMapping()),
        ]
        general = values._plan_value
        for plan in plans:
            with self.subTest(plan=repr(plan)[:60]):
                self.assertIsNotNone(general(plan))
                fast = values.encode_value(plan, method="plan")
                values._plan_value = lambda value: None
                try:
                    slow = values.encode_value(plan, method="plan")
                finally:
                    values._plan_value = general
                self.assertEqual(list(fast.items()), list(slow.items()))

    def test_freeze_is_deep_and_read_only(self):
        frozen = values.freeze({"a": [1, {"b": 2}]})
        self.assertEqual(frozen["a"][1]["b"], 2)
        with self.assertRaises(TypeError):
            frozen["a"] = 1
        with self.assertRaises(TypeError):
            frozen["a"][1]["b"] = 3
        self.assertIsInstance(frozen["a"], tuple)


class Materials(unittest.TestCase):
    def test_material_too_large(self):
        small = seams.RuntimeMaterials(files=(seams.RuntimeFile("a", b"x"),))
        self.assertIsNone(values.material_too_large(small))
        self.assertIsNone(values.material_too_large("not materials"))
        big = bytearray(values.MATERIAL_LIMIT // 2 + 1)
        large = seams.RuntimeMaterials(files=(seams.RuntimeFile("one", big), seams.RuntimeFile("two", memoryview(big))))
        msg = values.material_too_large(large)
        self.assertIsNotNone(msg)
        self.assertIn("material of 32.0 MiB (largest: one, 16.0 MiB) is above the 32 MiB", msg)
        # Exactly the limit is still carried.
        exact = seams.RuntimeMaterials(files=(seams.RuntimeFile("a", bytes(values.MATERIAL_LIMIT)),))
        self.assertIsNone(values.material_too_large(exact))

    def test_encode_materials_reports_each_wrong_type(self):
        m = seams.RuntimeMaterials(
            files=(seams.RuntimeFile("ok", b"hi"), seams.RuntimeFile(3, "text"), "not a file"),
            environment={"A": "1", "B": 2},
            turn_validity_seconds=30,
        )
        out = values.encode_value(m, method="prepare_turn")
        self.assertEqual(out["type"], "RuntimeMaterials")
        self.assertEqual(out["files"], [{"name": "ok", "content_b64": "aGk="},
                                        {"name": None, "content_b64": None},
                                        {"name": None, "content_b64": None}])
        self.assertEqual(out["environment"], {"A": "1", "B": "2"})
        self.assertEqual(out["turn_validity_seconds"], 30.0)
        self.assertEqual(out["type_errors"], [
            {"field": "files[1].name", "expected": "str", "got": "int"},
            {"field": "files[1].content", "expected": "bytes", "got": "str"},
            {"field": "files[2]", "expected": "RuntimeFile", "got": "str"},
            {"field": "environment[B]", "expected": "str", "got": "int"},
        ])
        self.assertNotIn("hi", out["repr"])  # content never in the repr

    def test_turn_validity_of_every_kind(self):
        for tvs, want in ((None, None), (float("inf"), "inf"), (float("nan"), "nan"), (2, 2.0)):
            with self.subTest(tvs=tvs):
                out = values.encode_value(seams.RuntimeMaterials(turn_validity_seconds=tvs), method="prepare_turn")
                self.assertEqual(out["turn_validity_seconds"], want)
                self.assertNotIn("problems", out)
        out = values.encode_value(seams.RuntimeMaterials(turn_validity_seconds=True), method="prepare_turn")
        self.assertEqual(out["problems"], ["turn_validity_seconds is a bool, not a number"])

    def test_an_integer_too_large_for_a_float_is_still_materials(self):
        # float(10**400) raises OverflowError: the materials must not turn into "other".
        out = values.encode_value(seams.RuntimeMaterials(turn_validity_seconds=10 ** 400), method="prepare_turn")
        self.assertEqual(out["type"], "RuntimeMaterials")
        self.assertEqual(out["turn_validity_seconds"], "inf")
        out = values.encode_value(seams.RuntimeMaterials(turn_validity_seconds=-10 ** 400), method="prepare_turn")
        self.assertEqual(out["turn_validity_seconds"], "-inf")

    def test_environment_that_is_not_a_mapping_or_raises(self):
        out = values.encode_value(seams.RuntimeMaterials(environment=[("A", "1")]), method="prepare_session")
        self.assertIsNone(out["environment"])
        self.assertEqual(out["problems"], ["environment is a list, not a mapping"])
        out = values.encode_value(seams.RuntimeMaterials(environment=RaisingMapping(A="1")), method="prepare_session")
        self.assertEqual(out["environment"], {})
        self.assertEqual(out["problems"], ["environment could not be read"])


class EncodeValue(unittest.TestCase):
    def test_plan(self):
        out = values.encode_value(seams.RuntimePreparationPlan(session_bound=1, declaration={"k": [1]}), method="plan")
        self.assertEqual(out["session_bound"], True)
        self.assertEqual(out["declaration"], {"k": [1]})
        self.assertIsNone(out["declaration_error"])
        self.assertEqual(out["problems"], ["session_bound is a int, not a bool"])
        out = values.encode_value(seams.RuntimePreparationPlan(declaration={"k": float("nan")}), method="plan")
        self.assertIsNone(out["declaration"])
        self.assertEqual(out["declaration_error"], "declaration['k'] is nan, which JSON cannot hold")
        out = values.encode_value(seams.RuntimePreparationPlan(declaration=[1]), method="plan")
        self.assertEqual(out["declaration_error"], "declaration is a list, not a mapping")
        out = values.encode_value(seams.RuntimePreparationPlan(declaration=RaisingMapping(a=1)), method="plan")
        self.assertEqual(out["declaration_error"], "reading the declaration raised RuntimeError")

    def test_user_action_state(self):
        state = seams.SessionUserActionState(
            ready="yes",
            user_action={"message": "Sign in", "url": 5, "status": "pending", "extra": {1: 2}},
            actions=(seams.SessionUserActionCommand(id="a", label=3), "b"),
        )
        out = values.encode_value(state, method="read_user_actions")
        self.assertIs(out["ready"], True)
        self.assertEqual(out["actions"], [{"id": "a", "label": "3"}])
        self.assertEqual(out["user_action"]["message"], "Sign in")
        self.assertEqual(out["user_action"]["url"], "<not a str: int>")
        self.assertEqual(out["user_action"]["extra"], {"1": 2})
        self.assertEqual(out["problems"], ["ready is a str, not a bool", "actions[0].label is a int, not a str",
                                           "actions[1] is a str, not a SessionUserActionCommand"])
        out = values.encode_value(seams.SessionUserActionState(ready=True, user_action=RaisingMapping()),
                                  method="read_user_actions")
        self.assertEqual(out["user_action"]["problems"], ["reading user_action raised RuntimeError"])
        out = values.encode_value(seams.SessionUserActionState(ready=True, user_action=["x"]), method="read_user_actions")
        self.assertEqual(out["user_action"]["problems"], ["user_action is a list, not a mapping"])

    def test_plain_values(self):
        self.assertEqual(values.encode_value(False, method="plan"), {"type": "bool", "value": False, "repr": "False"})
        self.assertEqual(values.encode_value(None, method="plan"), {"type": "none", "repr": "None"})
        self.assertEqual(values.encode_value(Raising(), method="plan"),
                         {"type": "other", "python_type": "test_values.Raising",
                          "repr": "<test_values.Raising object; repr() raised SystemExit>"})


class EncodeError(unittest.TestCase):
    def test_frames_are_the_providers_only(self):
        def provider_code():
            raise ValueError("bad thing")

        try:
            provider_code()
        except ValueError as exc:
            raised = exc
        err = values.encode_error(raised, is_provider_file=lambda f: f == __file__)
        self.assertEqual(err["type"], "ValueError")
        self.assertEqual(err["message"], "bad thing")
        self.assertEqual([f["function"] for f in err["frames"]], ["test_frames_are_the_providers_only", "provider_code"])
        self.assertIn("ValueError: bad thing", err["traceback"])
        self.assertIsNone(err["user_action"])
        none = values.encode_error(raised, is_provider_file=lambda f: False)
        self.assertEqual(none["frames"], [])

    def test_syntax_error_in_a_provider_file_names_its_line(self):
        try:
            compile("x = (", "/prov/mod.py", "exec")
        except SyntaxError as exc:
            err = values.encode_error(exc, is_provider_file=lambda f: f == "/prov/mod.py")
        self.assertEqual(err["frames"][-1]["file"], "/prov/mod.py")
        self.assertEqual(err["frames"][-1]["line"], 1)

    def test_user_action_required_and_cancelled(self):
        exc = seams.PreparationUserActionRequired(message="Approve", url="https://x.example/a", status="pending")
        err = values.encode_error(exc, is_provider_file=lambda f: True, cancelled=True)
        self.assertTrue(err["cancelled"])
        self.assertEqual(err["user_action"]["message"], "Approve")
        self.assertEqual(err["user_action"]["url"], "https://x.example/a")

    def test_an_exception_whose_str_raises(self):
        class Odd(Exception):
            def __str__(self):
                raise RuntimeError

        err = values.encode_error(Odd(), is_provider_file=lambda f: True)
        self.assertEqual(err["message"], "<str() raised RuntimeError>")
        self.assertIn("Odd", err["type"])

    def test_harness_error(self):
        self.assertEqual(values.harness_error("ArgumentError", "bad"), {
            "type": "ArgumentError", "message": "bad", "repr": "ArgumentError('bad')", "traceback": "",
            "cancelled": False, "frames": [], "user_action": None})


if __name__ == "__main__":
    unittest.main()
