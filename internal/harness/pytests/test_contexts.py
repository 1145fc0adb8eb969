"""contexts: the keyword arguments a provider's callback receives, built from a call's protocol JSON
(docs/protocol.md, Callbacks): the seams dataclasses with their nested objects, read-only configuration, file
paths from the ``file_paths_dir`` Go adds, clear errors naming the field for a wrong shape, and the
``SandboxHandle`` whose methods become ``sandbox`` requests answered by ``sandbox_reply``."""

import asyncio
import base64
import os
import sys
import threading
import unittest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
sys.path.insert(0, PYTHON_DIR)

from astrabox import seams  # noqa: E402
from astrabox._harness import contexts  # noqa: E402
from astrabox._harness.observe import CURRENT_CALL  # noqa: E402

WAIT = 10.0  # seconds: a bound on waiting for a reply, never a pause

SANDBOX = {"sandbox_id": "sb-1", "home": "/home/workload", "workspace": "/workspace"}


def session_context(**changes):
    ctx = {"session_id": "s-1", "agent_id": "a-1", "principal_id": "p-1", "config": {"region": "eu", "tiers": [1, 2]},
           "runtime_generation": "g-1", "sandbox_id": "sb-1",
           "workload_identity": {"subject": "wl:s-1", "token": "tok"}, "trigger": "create",
           "file_paths_dir": "/run/astrabox/files/s-1/"}
    ctx.update(changes)
    return ctx


def turn_context(**changes):
    ctx = {"session_id": "s-1", "agent_id": "a-1", "principal_id": "p-1", "dispatch_attempt_id": "d-1",
           "runtime_generation": "g-1", "sandbox_handle": dict(SANDBOX), "deadline": 1700000000.5, "refresh": False,
           "file_paths_dir": "/run/astrabox/files/s-1"}
    ctx.update(changes)
    return ctx


def agent_context(**changes):
    ctx = {"operation": {"agent_id": "a-1", "operation_id": "op-1", "deadline": 1700000000.0},
           "creator_user_id": "u-1", "config_version": 3, "preparation_id": "prep-1", "runtime_generation": "g-1",
           "config": {"skills": {"enabled": True}}, "sandbox": dict(SANDBOX),
           "packages": [{"source": {"git": "https://example.test/a.git"}, "path": "/cache/a"},
                        {"source": {"npm": "b"}, "path": "/cache/b"}],
           "skills_path": None}
    ctx.update(changes)
    return ctx


class NoSandbox:
    def send(self, msg):
        raise AssertionError("no sandbox request expected: %r" % (msg,))


BRIDGE = contexts.SandboxBridge(NoSandbox().send)


def kwargs(method, args):
    return contexts.callback_kwargs(method, args, BRIDGE)


class Callbacks(unittest.TestCase):
    def test_plan_gets_a_read_only_deep_frozen_config(self):
        config = kwargs("plan", {"config": {"a": {"b": [1, {"c": 2}]}}})["config"]
        self.assertEqual(config["a"]["b"][1]["c"], 2)
        with self.assertRaises(TypeError):
            config["x"] = 1
        with self.assertRaises(TypeError):
            config["a"]["b"][1]["c"] = 3

    def test_recover_gets_the_operation(self):
        got = kwargs("recover", {"operation": {"agent_id": "a", "operation_id": "o", "deadline": 5.0, "extra": 1}})
        self.assertEqual(got, {"operation": seams.AgentPreparationOperation("a", "o", 5.0)})

    def test_synchronize_gets_nested_operation_packages_and_sandbox(self):
        ctx = kwargs("synchronize", {"context": agent_context()})["context"]
        self.assertIsInstance(ctx, seams.AgentPreparationContext)
        self.assertEqual(ctx.operation, seams.AgentPreparationOperation("a-1", "op-1", 1700000000.0))
        self.assertIsInstance(ctx.packages, tuple)
        self.assertEqual([p.path for p in ctx.packages], ["/cache/a", "/cache/b"])
        self.assertEqual(ctx.packages[0].source["git"], "https://example.test/a.git")
        with self.assertRaises(TypeError):
            ctx.packages[1].source["npm"] = "c"
        self.assertIsInstance(ctx.sandbox, seams.SandboxHandle)
        self.assertEqual((ctx.sandbox.sandbox_id, ctx.sandbox.home, ctx.sandbox.workspace),
                         ("sb-1", "/home/workload", "/workspace"))
        self.assertIsNone(ctx.skills_path)
        with self.assertRaises(TypeError):
            ctx.config["skills"]["enabled"] = False

    def test_prepare_session_file_paths_come_from_the_directory_go_gives(self):
        ctx = kwargs("prepare_session", {"context": session_context()})["context"]
        self.assertIsInstance(ctx, seams.SessionPreparationContext)
        self.assertEqual(ctx.workload_identity, seams.WorkloadIdentity("wl:s-1", "tok"))
        self.assertEqual(ctx.file_path("gh-token"), "/run/astrabox/files/s-1/gh-token")
        self.assertEqual(ctx.file_path("A.b_c-1"), "/run/astrabox/files/s-1/A.b_c-1")
        self.assertNotIn("tok", repr(ctx))
        self.assertNotIn("eu", repr(ctx))

    def test_prepare_turn_answers_the_same_file_paths(self):
        turn = kwargs("prepare_turn", {"context": turn_context()})["context"]
        session = kwargs("prepare_session", {"context": session_context()})["context"]
        self.assertIsInstance(turn, seams.TurnPreparationContext)
        self.assertEqual(turn.file_path("gh-token"), session.file_path("gh-token"))
        self.assertIsInstance(turn.sandbox_handle, contexts.SandboxProxy)
        self.assertEqual(turn.deadline, 1700000000.5)

    def test_file_path_refuses_names_that_are_not_safe_basenames(self):
        ctx = kwargs("prepare_session", {"context": session_context()})["context"]
        for name in ("../etc/passwd", "a/b", "..", "a..b", ".hidden", "", "-x", "x" * 129, "é", None, 3, b"x"):
            with self.subTest(name=name):
                with self.assertRaises(ValueError) as cm:
                    ctx.file_path(name)
                self.assertIn("not a safe file name", str(cm.exception))
        ctx.file_path("x" * 128)  # the longest allowed

    def test_file_path_without_a_directory_says_the_platform_supplies_it(self):
        ctx = kwargs("prepare_session", {"context": session_context(file_paths_dir="")})["context"]
        with self.assertRaises(RuntimeError) as cm:
            ctx.file_path("token")
        self.assertIn("platform supplies it", str(cm.exception))
        del_dir = session_context()
        del del_dir["file_paths_dir"]  # an older Go: the field is optional
        with self.assertRaises(RuntimeError):
            kwargs("prepare_session", {"context": del_dir})["context"].file_path("token")

    def test_user_action_callbacks(self):
        ctx = {"session_id": "s-1", "owner_id": "o-1", "agent_id": "a-1"}
        self.assertEqual(kwargs("read_user_actions", {"context": ctx}),
                         {"context": seams.SessionUserActionContext("s-1", "o-1", "a-1")})
        self.assertEqual(kwargs("perform_user_action", {"context": ctx, "action_id": "act-9"}),
                         {"context": seams.SessionUserActionContext("s-1", "o-1", "a-1"), "action_id": "act-9"})


class Shapes(unittest.TestCase):
    def assert_refused(self, method, args, message):
        with self.assertRaises(contexts.ArgumentError) as cm:
            kwargs(method, args)
        self.assertEqual(str(cm.exception), message)

    def test_wrong_shapes_name_the_field(self):
        self.assert_refused("plan", [], "args must be an object")
        self.assert_refused("plan", {}, "args lacks the field 'config'")
        self.assert_refused("plan", {"config": [1]}, "args.config must be an object")
        self.assert_refused("recover", {"operation": "op-1"}, "operation must be an object")
        self.assert_refused("prepare_session", {}, "args lacks the field 'context'")
        ctx = session_context()
        del ctx["trigger"]
        self.assert_refused("prepare_session", {"context": ctx}, "context lacks the field 'trigger'")
        self.assert_refused("prepare_session", {"context": session_context(workload_identity={"subject": "x"})},
                            "context.workload_identity lacks the field 'token'")
        self.assert_refused("prepare_session", {"context": session_context(config="region=eu")},
                            "context.config must be an object")
        self.assert_refused("prepare_session", {"context": session_context(file_paths_dir=7)},
                            "context.file_paths_dir must be a string")
        self.assert_refused("prepare_turn", {"context": turn_context(sandbox_handle={"home": "/h"})},
                            "context.sandbox_handle lacks the field 'sandbox_id'")
        self.assert_refused("prepare_turn", {"context": turn_context(sandbox_handle=dict(SANDBOX, home=None))},
                            "context.sandbox_handle fields must be strings")
        self.assert_refused("synchronize", {"context": agent_context(packages={"a": 1})},
                            "context.packages must be a list")
        self.assert_refused("synchronize", {"context": agent_context(packages=[{"source": {}, "path": "/p"}, {}])},
                            "context.packages[1] lacks the field 'source'")
        self.assert_refused("perform_user_action",
                            {"context": {"session_id": "s", "owner_id": "o", "agent_id": "a"}, "action_id": 9},
                            "args.action_id must be a string")


class Recorder:
    """Plays Go: records each ``sandbox`` request and answers it from another thread, as the reader thread does."""

    def __init__(self, bridge_reply):
        self.sent = []
        self.bridge = contexts.SandboxBridge(self.send)
        self.reply = bridge_reply

    def send(self, msg):
        self.sent.append(msg)
        reply = self.reply(msg)
        if reply is not None:
            reply = dict(reply, kind="sandbox_reply", id=msg["id"])
            threading.Thread(target=self.bridge.resolve, args=(reply,)).start()


def run(coro):
    # A loop of its own, never set as the thread's: asyncio.run would leave the main thread without an implicit
    # loop, which later suites of the same run (under 3.9) still ask for.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, WAIT))
    finally:
        loop.close()


class Sandbox(unittest.TestCase):
    def handle(self, reply):
        rec = Recorder(reply)
        return rec, contexts.SandboxProxy(rec.bridge, "sb-1", "/home/workload", "/workspace")

    def test_each_method_is_one_request_and_its_reply_is_the_value(self):
        values = {"read_file": {"content_b64": base64.b64encode(b"\x00bytes").decode()}, "exists": True,
                  "list_dir": ["a", "b"], "write_file": None, "remove": None}
        rec, handle = self.handle(lambda msg: {"ok": True, "value": values[msg["op"]], "error": None})

        async def calls():
            token = CURRENT_CALL.set(7)
            try:
                return (await handle.read_file("/home/workload/x"), await handle.exists("/x"),
                        await handle.list_dir("/d"), await handle.write_file("/f", b"data", mode=0o640),
                        await handle.remove("/f"))
            finally:
                CURRENT_CALL.reset(token)

        self.assertEqual(run(calls()), (b"\x00bytes", True, ("a", "b"), None, None))
        self.assertEqual([(m["kind"], m["call"], m["sandbox_id"], m["op"], m["path"]) for m in rec.sent],
                         [("sandbox", 7, "sb-1", "read_file", "/home/workload/x"), ("sandbox", 7, "sb-1", "exists", "/x"),
                          ("sandbox", 7, "sb-1", "list_dir", "/d"), ("sandbox", 7, "sb-1", "write_file", "/f"),
                          ("sandbox", 7, "sb-1", "remove", "/f")])
        ids = [m["id"] for m in rec.sent]
        self.assertEqual(len(set(ids)), 5)
        write = rec.sent[3]
        self.assertEqual((base64.b64decode(write["content_b64"]), write["mode"]), (b"data", 0o640))

    def test_a_reply_error_raises_the_builtin_exception_go_names(self):
        for name, exc_type in (("FileNotFoundError", FileNotFoundError), ("PermissionError", PermissionError),
                               ("IsADirectoryError", IsADirectoryError), ("NotADirectoryError", NotADirectoryError),
                               ("OSError", OSError), ("SystemExit", OSError)):
            _, handle = self.handle(lambda msg, name=name: {"ok": False, "error": {"type": name, "message": "no: " + name}})
            with self.subTest(error=name):
                with self.assertRaises(exc_type) as cm:
                    run(handle.read_file("/missing"))
                self.assertIs(type(cm.exception), exc_type)
                self.assertEqual(str(cm.exception), "no: " + name)
        _, handle = self.handle(lambda msg: {"ok": False, "error": None})
        with self.assertRaises(OSError) as cm:
            run(handle.remove("/x"))
        self.assertEqual(str(cm.exception), "sandbox remove failed")

    def test_wrong_argument_types_are_refused_before_any_request(self):
        rec, handle = self.handle(lambda msg: {"ok": True, "value": None})
        with self.assertRaises(TypeError):
            run(handle.read_file(b"/x"))
        with self.assertRaises(TypeError):
            run(handle.write_file("/x", "text, not bytes"))
        with self.assertRaises(TypeError):
            run(handle.write_file("/x", b"data", mode=True))
        with self.assertRaises(TypeError):
            run(handle.write_file("/x", b"data", mode="0600"))
        self.assertEqual(rec.sent, [])
        run(handle.write_file("/x", bytearray(b"ok"), mode=0o600))
        run(handle.write_file("/x", memoryview(b"ok")))
        self.assertEqual(len(rec.sent), 2)

    def test_a_reply_for_a_cancelled_or_unknown_request_is_ignored(self):
        rec, handle = self.handle(lambda msg: None)  # Go never answers in time

        async def cancelled():
            task = asyncio.ensure_future(handle.exists("/slow"))
            while not rec.sent:
                await asyncio.sleep(0)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task

        run(cancelled())
        # The late reply, an unknown id and a malformed id change nothing and raise nothing.
        rec.bridge.resolve({"kind": "sandbox_reply", "id": rec.sent[0]["id"], "ok": True, "value": True})
        rec.bridge.resolve({"kind": "sandbox_reply", "id": 999, "ok": True})
        rec.bridge.resolve({"kind": "sandbox_reply", "id": "1", "ok": True})
        self.assertEqual(rec.bridge._pending, {})


if __name__ == "__main__":
    unittest.main()
