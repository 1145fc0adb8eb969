"""astrabox.seams: shapes, defaults, redacting reprs and the host validation helpers."""

import asyncio
import dataclasses
import os
import pickle
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from astrabox import seams  # noqa: E402
from astrabox.seams import (  # noqa: E402
    AgentPreparationContext,
    AgentPreparationOperation,
    PackageCheckout,
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SandboxHandle,
    SessionPreparationContext,
    SessionUserActionCommand,
    SessionUserActionContext,
    SessionUserActionState,
    TurnPreparationContext,
    WorkloadIdentity,
    is_safe_file_name,
    validate_user_action,
)

SECRET_BYTES = b"s3cr3t-file-bytes"
SECRET_ENV = "s3cr3t-env-value"
SECRET_TOKEN = "s3cr3t-workload-token"
SECRET_CONFIG = "s3cr3t-config-value"


def session_context(**over):
    kw = dict(
        session_id="sess",
        agent_id="agent",
        principal_id="owner",
        config={"api_key": SECRET_CONFIG},
        runtime_generation="gen",
        sandbox_id="sb",
        workload_identity=WorkloadIdentity(subject="wl", token=SECRET_TOKEN),
        trigger="claim",
    )
    kw.update(over)
    return SessionPreparationContext(**kw)


class ReprTest(unittest.TestCase):
    def assertHidden(self, obj, *secrets):
        for text in (repr(obj), str(obj), "%s" % (obj,), "{}".format(obj)):
            for secret in secrets:
                needle = secret.decode() if isinstance(secret, bytes) else secret
                self.assertNotIn(needle, text)

    def test_runtime_file_repr_shows_size_not_bytes(self):
        f = RuntimeFile("token.json", SECRET_BYTES)
        self.assertEqual(repr(f), "RuntimeFile(name='token.json', content=<redacted %d bytes>)" % len(SECRET_BYTES))
        self.assertEqual(str(f), repr(f))
        self.assertHidden(f, SECRET_BYTES)

    def test_materials_repr_matches_spec_example(self):
        m = RuntimeMaterials(files=(RuntimeFile("token.json", b"x" * 412),), environment={"GH_TOKEN": SECRET_ENV})
        self.assertEqual(
            repr(m),
            "RuntimeMaterials(files=(RuntimeFile(name='token.json', content=<redacted 412 bytes>),), "
            "environment={'GH_TOKEN': <redacted>})",
        )
        self.assertEqual(str(m), repr(m))
        self.assertHidden(m, SECRET_ENV)
        m2 = RuntimeMaterials(files=[RuntimeFile("a", SECRET_BYTES), RuntimeFile("b", b"")], turn_validity_seconds=5.0)
        self.assertIn("turn_validity_seconds=5.0", repr(m2))
        self.assertHidden(m2, SECRET_BYTES)

    def test_contexts_hide_config_and_token(self):
        ctx = session_context()
        self.assertHidden(ctx, SECRET_CONFIG, SECRET_TOKEN, "api_key")
        self.assertIn("subject='wl'", repr(ctx))
        self.assertHidden(WorkloadIdentity("wl", SECRET_TOKEN), SECRET_TOKEN)
        actx = AgentPreparationContext(
            operation=AgentPreparationOperation("agent", "op", 1.0),
            creator_user_id="u",
            config_version=1,
            preparation_id="p",
            runtime_generation="g",
            config={"k": SECRET_CONFIG},
            sandbox=SandboxHandle("sb", "/home/w", "/ws"),
            packages=[PackageCheckout({"git": "x"}, "/cache/x")],
            skills_path=None,
        )
        self.assertHidden(actx, SECRET_CONFIG)
        self.assertIsInstance(actx.packages, tuple)

    def test_file_paths_dir_is_private(self):
        ctx = session_context(_file_paths_dir="/home/w/.astrabox")
        self.assertNotIn("/home/w/.astrabox", repr(ctx))
        self.assertEqual(ctx.file_path("token.json"), "/home/w/.astrabox/token.json")
        self.assertEqual(ctx, session_context(_file_paths_dir="/elsewhere"))
        public = [f.name for f in dataclasses.fields(SessionPreparationContext) if not f.name.startswith("_")]
        self.assertEqual(public[-1], "trigger")

    def test_file_path_rejects_unsafe_names(self):
        ctx = session_context(_file_paths_dir="/home/w/.astrabox")
        for bad in ("../x", "a/b", "", ".hidden", "a..b", "x" * 129, "tok\n", 3):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError):
                    ctx.file_path(bad)
        turn = TurnPreparationContext("s", "a", "p", "d", "g", SandboxHandle(), 1.0, False)
        with self.assertRaises(RuntimeError):
            turn.file_path("token.json")  # no directory supplied

    def test_user_action_exception(self):
        exc = PreparationUserActionRequired(message="Sign in", url="https://id.example/x")
        self.assertEqual(str(exc), "Sign in")
        self.assertEqual((exc.message, exc.url, exc.status), ("Sign in", "https://id.example/x", "pending"))
        with self.assertRaises(TypeError):
            PreparationUserActionRequired("positional")  # type: ignore[misc]
        again = pickle.loads(pickle.dumps(exc))
        self.assertEqual((again.message, again.url, again.status), (exc.message, exc.url, exc.status))


class ShapeTest(unittest.TestCase):
    def test_frozen_and_tuples(self):
        m = RuntimeMaterials(files=[RuntimeFile("a", b"1")])
        self.assertIsInstance(m.files, tuple)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            m.files = ()  # type: ignore[misc]
        s = SessionUserActionState(ready=False, actions=[SessionUserActionCommand("c", "Check")])
        self.assertIsInstance(s.actions, tuple)
        self.assertEqual(RuntimePreparationPlan(), RuntimePreparationPlan(session_bound=False, declaration={}))

    def test_contexts_with_read_only_config_are_hashable(self):
        import types

        ctx = session_context(config=types.MappingProxyType({"k": (1, 2)}))
        self.assertEqual(hash(ctx), hash(session_context(config=types.MappingProxyType({"other": 1}))))
        self.assertIsInstance(hash(PackageCheckout(types.MappingProxyType({"git": "x"}), "/c")), int)

    def test_provider_defaults(self):
        class P(RuntimePreparationProvider):
            name = "p"

        p = P()
        self.assertEqual(RuntimePreparationProvider.name, "")
        self.assertEqual(p.plan(config={}), RuntimePreparationPlan())
        ctx = SessionUserActionContext("s", "o", "a")

        async def run():
            self.assertIsNone(await p.synchronize(context=None))
            self.assertFalse(await p.recover(operation=AgentPreparationOperation("a", "o", 0.0)))
            self.assertEqual(await p.prepare_session(context=None), RuntimeMaterials())
            self.assertEqual(await p.prepare_turn(context=None), RuntimeMaterials())
            self.assertEqual(await p.read_user_actions(context=ctx), SessionUserActionState(ready=True))
            with self.assertRaises(NotImplementedError):
                await p.perform_user_action(context=ctx, action_id="x")

        asyncio.run(run())
        with self.assertRaises(TypeError):
            p.plan({})  # keyword-only

    def test_sandbox_handle_base_raises(self):
        handle = SandboxHandle("sb", "/h", "/w")

        async def run():
            for call in (handle.read_file("/h/x"), handle.write_file("/h/x", b""), handle.exists("/h"),
                         handle.list_dir("/h"), handle.remove("/h/x")):
                with self.assertRaises(NotImplementedError):
                    await call

        asyncio.run(run())


class ValidationTest(unittest.TestCase):
    def test_valid(self):
        self.assertEqual(validate_user_action("Complete the consent.", "https://id.example/c?x=1", "pending"), [])
        self.assertEqual(validate_user_action("m", None, "expired"), [])
        self.assertEqual(validate_user_action("x" * 1000, "http://h/" + "p" * 2039, "failed"), [])

    def test_each_rule(self):
        cases = [
            (("", None, "pending"), "message is empty"),
            (("x" * 1001, None, "pending"), "1001 characters"),
            (("line\nbreak", None, "pending"), "non-printable"),
            ((None, None, "pending"), "message must be a str"),
            (("m", None, "waiting"), "not one of"),
            (("m", "ftp://host/x", "pending"), "http or https"),
            (("m", "/relative/path", "pending"), "http or https"),
            (("m", "https://user:pw@host/x", "pending"), "user information"),
            (("m", "https://h/" + "p" * 2039, "pending"), "2049 characters"),
            (("m", 42, "pending"), "url must be a str"),
            (("m", "https:///nohost", "pending"), "no host"),
        ]
        for args, expected in cases:
            with self.subTest(expected=expected):
                problems = validate_user_action(*args)
                self.assertTrue(any(expected in p for p in problems), problems)
        # Problems never quote the URL, which may carry credentials.
        self.assertFalse(any("pw@" in p for p in validate_user_action("m", "https://user:pw@host/x", "pending")))

    def test_safe_file_names(self):
        for good in ("token.json", "a", "A-b_c.9", "x" * 128):
            self.assertTrue(is_safe_file_name(good), good)
        for bad in ("", ".x", "-x", "a/b", "a..b", "x" * 129, "a\n", "ü", None):
            self.assertFalse(is_safe_file_name(bad), bad)
        self.assertTrue(seams.is_valid_provider_name("enterprise"))
        self.assertFalse(seams.is_valid_provider_name("Enterprise"))


if __name__ == "__main__":
    unittest.main()
