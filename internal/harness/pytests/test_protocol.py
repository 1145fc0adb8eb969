"""The harness over real pipes: handshake, load, every value encoding, errors, observations."""

import base64
import os
import re
import signal
import struct
import subprocess
import sys
import time
import unittest

from harnessclient import ENTRY, FIXTURES, SRC, WAIT, Harness

GOOD = os.path.join(SRC, "fixprov", "good.py")


def marker_line(path, marker):
    """The line number of the fixture line carrying ``# MARKER`` (so no line number is hard-coded)."""
    with open(path) as fh:
        for number, text in enumerate(fh, 1):
            if "# " + marker in text:
                return number
    raise AssertionError("marker %s not found in %s" % (marker, path))


def session_args(session_id):
    return {
        "context": {
            "session_id": session_id,
            "agent_id": "agent-1",
            "principal_id": "owner-1",
            "config": {"k": [1, 2]},
            "runtime_generation": "gen-1",
            "sandbox_id": "sb-1",
            "workload_identity": {"subject": "wl", "token": "workload-token"},
            "trigger": "claim",
            "file_paths_dir": "/home/workload/.astrabox",
        }
    }


def wait_for(predicate, what):
    deadline = time.monotonic() + WAIT  # hang guard only
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


class LaunchTest(unittest.TestCase):
    def test_by_hand_prints_the_human_message(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASTRABOX_")}
        proc = subprocess.run([sys.executable, "-B", ENTRY], env=env, cwd=FIXTURES, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=WAIT)
        self.assertEqual(proc.returncode, 1)
        self.assertIn(b"This is the astrabox provider harness. It is started by the astrabox command, not by hand.",
                      proc.stderr)
        self.assertIn(b"Run `astrabox conformance run` in your provider project instead.", proc.stderr)
        self.assertEqual(proc.stdout, b"")

    def test_hello_echoes_cookie_and_working_dir_cannot_shadow(self):
        # The working directory holds a package named astrabox that raises on import, and PYTHONPATH
        # names it twice (relative and absolute): the harness must drop both and import its own SDK.
        shadow = os.path.join(FIXTURES, "shadow")
        with Harness(cwd=shadow, env={"PYTHONPATH": os.pathsep.join([".", shadow, ""])}) as h:
            hello = h.hello()
            self.assertEqual(hello["cookie"], h.cookie)
            self.assertEqual(hello["protocol"], 1)
            self.assertEqual(hello["pid"], h.proc.pid)
            self.assertEqual(hello["python"], list(sys.version_info[:3]))
            self.assertEqual(hello["implementation"], "cpython")
            reply = h.call("plan", {"config": {}})
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["type"], "astrabox.harness.NotLoaded")
            self.assertTrue(h.load("fixprov.good:Good")["ok"])
            path = h.call("plan", {"config": {"mode": "syspath"}})["value"]["declaration"]["sys_path"]
            self.assertEqual(path[0], SRC)  # load prepends the project's paths
            self.assertEqual(path[1], os.path.dirname(os.path.dirname(os.path.dirname(ENTRY))))  # then the SDK
            for bad in ("", ".", shadow, os.path.dirname(ENTRY)):
                self.assertNotIn(bad, path)
        self.assertEqual(h.proc.returncode, 0)  # shutdown ends with status 0

    def test_oversized_frame_is_a_protocol_error(self):
        h = Harness()
        try:
            h.hello()
            os.write(h.req_w, struct.pack(">I", 64 * 1024 * 1024 + 1))
            self.assertEqual(h.proc.wait(timeout=WAIT), 2)
            h.stderr.join(WAIT)
            self.assertIn(b"harness protocol corrupted", h.stderr.text())
        finally:
            h.close()

    def test_end_of_requests_ends_the_process(self):
        h = Harness()
        try:
            h.hello()
            os.close(h.req_w)
            self.assertEqual(h.proc.wait(timeout=WAIT), 0)
        finally:
            h.close()


class ProcessTest(unittest.TestCase):
    def test_limits_from_environment(self):
        four_gib = 4 * 1024 * 1024 * 1024
        with Harness(env={"ASTRABOX_LIMIT_NOFILE": "200", "ASTRABOX_LIMIT_AS": str(four_gib)}) as h:
            h.hello()
            h.load("fixprov.good:Good")
            decl = h.call("plan", {"config": {"mode": "limits"}})["value"]["declaration"]
            self.assertEqual(decl["nofile"][0], 200)
            self.assertEqual(decl["core"], [0, 0])
            self.assertEqual(decl["as"][0], four_gib)

    def test_sigusr1_dumps_stacks_and_keeps_serving(self):
        with Harness() as h:
            h.hello()
            self.assertTrue(h.load("fixprov.good:Good")["ok"])  # the reader thread runs by now
            os.kill(h.proc.pid, signal.SIGUSR1)
            wait_for(lambda: b"most recent call first" in h.stderr.text(), "the faulthandler dump")
            wait_for(lambda: b"\nThread 0x" in h.stderr.text(), "the other threads in the dump")
            self.assertTrue(h.call("plan", {"config": {}})["ok"])


class LoadTest(unittest.TestCase):
    def test_good_target(self):
        with Harness() as h:
            h.hello()
            reply = h.load("fixprov.good:Good")
            self.assertTrue(reply["ok"], reply)
            v = reply["value"]
            self.assertEqual(v["module_file"], GOOD)
            self.assertEqual((v["qualname"], v["file"]), ("Good", GOOD))
            self.assertEqual(v["line"], marker_line(GOOD, "CLASS_LINE"))
            self.assertTrue(v["is_class"] and v["is_subclass"] and v["instantiated"])
            self.assertEqual((v["name"], v["name_is_classattr"], v["name_error"]), ("good", True, None))
            self.assertEqual(v["provider_roots"], [os.path.join(SRC, "fixprov"), SRC])
            m = v["methods"]
            self.assertEqual(sorted(m), sorted(["plan", "synchronize", "recover", "prepare_session",
                                                "prepare_turn", "read_user_actions", "perform_user_action"]))
            self.assertEqual((m["plan"]["overridden"], m["plan"]["async"]), (True, False))
            self.assertEqual(m["plan"]["file"], GOOD)
            self.assertEqual(m["plan"]["line"], marker_line(GOOD, "PLAN_LINE"))
            self.assertEqual((m["prepare_turn"]["overridden"], m["prepare_turn"]["async"]), (True, True))
            self.assertEqual((m["read_user_actions"]["overridden"], m["read_user_actions"]["async"]), (True, False))
            self.assertEqual((m["perform_user_action"]["overridden"], m["perform_user_action"]["async"]), (False, True))
            self.assertTrue(m["perform_user_action"]["file"].endswith(os.path.join("astrabox", "seams.py")))

    def test_top_level_module_root(self):
        with Harness() as h:
            h.hello()
            v = h.load("fixtop:Provider")["value"]
            self.assertEqual(v["provider_roots"], [SRC])
            self.assertEqual((v["name"], v["name_error"]), ("top.level-1", None))
            self.assertFalse(any(m["overridden"] for m in v["methods"].values()))

    def test_failed_loads_then_a_good_one(self):
        # A failed load leaves nothing loaded, so one process can try several targets.
        ctor = os.path.join(SRC, "fixprov", "badctor.py")
        with Harness() as h:
            h.hello()
            reply = h.load("fixprov.badimport:Provider")
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["type"], "ModuleNotFoundError")
            self.assertIn("this_module_does_not_exist_anywhere", reply["error"]["message"])
            self.assertEqual([f["file"] for f in reply["error"]["frames"]],
                             [os.path.join(SRC, "fixprov", "badimport.py")])

            reply = h.load("fixprov.good:Missing")
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["type"], "AttributeError")
            self.assertIn("'Missing'", reply["error"]["message"])

            reply = h.load("fixprov.badctor:Provider")
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["message"], "cannot start")
            self.assertEqual(reply["error"]["frames"][-1],
                             {"file": ctor, "line": marker_line(ctor, "CTOR_LINE"), "function": "__init__"})

            reply = h.load("no-colon-here")
            self.assertEqual(reply["error"]["type"], "astrabox.harness.ArgumentError")

            self.assertTrue(h.load("fixprov.good:Good")["ok"])
            self.assertEqual(h.load("fixprov.good:Good")["error"]["type"], "astrabox.harness.AlreadyLoaded")

    def test_not_a_subclass(self):
        with Harness() as h:
            h.hello()
            reply = h.load("fixprov.notsub:Thing")
            self.assertTrue(reply["ok"])
            self.assertEqual((reply["value"]["is_class"], reply["value"]["is_subclass"],
                              reply["value"]["instantiated"]), (True, False, False))
            call = h.call("plan", {"config": {}})
            self.assertEqual(call["error"]["type"], "astrabox.harness.NotInstantiated")

    def test_name_checks(self):
        cases = {
            "Spaced": ("Bad Name", True, "does not match"),
            "Unnamed": ("", False, "name is not set"),
            "OnInstance": ("late", False, "set on the instance"),
        }
        for attr, (name, classattr, error) in cases.items():
            with self.subTest(attr=attr), Harness() as h:
                h.hello()
                v = h.load("fixprov.badname:" + attr)["value"]
                self.assertEqual((v["name"], v["name_is_classattr"]), (name, classattr))
                self.assertIn(error, v["name_error"])


class CallTest(unittest.TestCase):
    """One loaded provider serves the call tests (each call is independent)."""

    @classmethod
    def setUpClass(cls):
        cls.h = Harness()
        cls.h.hello()
        reply = cls.h.load("fixprov.good:Good")
        assert reply["ok"], reply

    @classmethod
    def tearDownClass(cls):
        cls.h.close()

    def plan(self, mode, **config):
        config["mode"] = mode
        return self.h.call("plan", {"config": config})

    # -- values ------------------------------------------------------------------------------------------

    def test_plan_value(self):
        v = self.plan("default")["value"]
        self.assertEqual(v["type"], "RuntimePreparationPlan")
        self.assertIs(v["session_bound"], True)
        self.assertEqual(v["declaration"], {"a": [1, 2.5, None], "b": {"c": True}})
        self.assertIsNone(v["declaration_error"])
        self.assertTrue(v["repr"].startswith("RuntimePreparationPlan(session_bound=True"))

    def test_plan_coroutine_is_closed(self):
        reply = self.plan("coroutine")
        self.assertTrue(reply["ok"])
        self.assertEqual(reply["value"]["type"], "coroutine")
        self.assertEqual(reply["observations"]["warnings"], [])  # closed, so never "never awaited"

    # -- the returned frame (protocol.md, "returned") ---------------------------------------------------------

    def assertReturnedFirst(self, kinds):
        self.assertIn("returned", kinds)
        self.assertLess(kinds.index("returned"), kinds.index("reply"), kinds)

    def test_returned_is_folded_into_a_quick_small_reply_far_from_the_deadline(self):
        for method, args, timeout in (("plan", {"config": {"mode": "default"}}, 10.0),
                                      ("prepare_session", session_args("plain"), 10.0),
                                      ("prepare_session", session_args("plain"), 0)):  # no deadline
            with self.subTest(method=method, timeout=timeout):
                reply = self.h.call(method, args, timeout_s=timeout)
                self.assertTrue(reply["ok"], reply)
                self.assertNotIn("returned", self.h.last_kinds)

    def test_returned_comes_first_when_the_deadline_is_near(self):
        for method, args in (("plan", {"config": {"mode": "default"}}), ("prepare_session", session_args("plain"))):
            with self.subTest(method=method):
                reply = self.h.call(method, args, timeout_s=0.5)
                self.assertTrue(reply["ok"], reply)
                self.assertReturnedFirst(self.h.last_kinds)

    def test_returned_comes_first_for_a_large_material(self):
        reply = self.h.call("prepare_session", session_args("bundle"), timeout_s=10.0)
        self.assertReturnedFirst(self.h.last_kinds)
        self.assertEqual(base64.b64decode(reply["value"]["files"][0]["content_b64"]), bytes(200 * 1024))

    def test_returned_comes_first_when_the_reply_is_slow_to_make(self):
        reply = self.h.call("prepare_session", session_args("slow-repr"), timeout_s=10.0)
        self.assertEqual(reply["value"]["repr"], "SlowRepr()")
        self.assertReturnedFirst(self.h.last_kinds)
        self.assertLess(reply["duration_ns"], 250_000_000)  # the repr is the kit's time, not the callback's

    def test_declaration_errors(self):
        for mode, text in (("nan", "nan"), ("nonjson", "not JSON-serialisable")):
            v = self.plan(mode)["value"]
            self.assertIsNone(v["declaration"])
            self.assertIn(text, v["declaration_error"])

    def test_other_bool_none(self):
        self.assertEqual(self.plan("other")["value"], {"type": "other", "python_type": "dict", "repr": "{'k': [1, 2]}"})
        self.assertEqual(self.plan("bool")["value"], {"type": "bool", "value": True, "repr": "True"})
        self.assertEqual(self.plan("log")["value"], {"type": "none", "repr": "None"})

    def test_materials_and_non_finite(self):
        v = self.plan("materials")["value"]
        self.assertEqual(v["type"], "RuntimeMaterials")
        self.assertEqual(v["files"], [{"name": "token.json", "content_b64": base64.b64encode(b"\x00secret-bytes").decode()}])
        self.assertEqual(v["environment"], {"GH_TOKEN": "env-secret"})
        self.assertEqual(v["turn_validity_seconds"], "inf")
        self.assertNotIn("env-secret", v["repr"])
        self.assertNotIn("secret-bytes", v["repr"])

    def test_wrong_types_inside_materials(self):
        v = self.plan("badmaterials")["value"]
        self.assertEqual(v["files"][0], {"name": "t.json", "content_b64": None})
        self.assertIn("files[0].content is a str, not bytes", v["problems"])
        self.assertIn("files[1] is a str, not a RuntimeFile", v["problems"])

    def test_session_materials_and_file_path(self):
        reply = self.h.call("prepare_session", session_args("plain"))
        v = reply["value"]
        self.assertEqual(v["environment"], {"TOKEN_FILE": "/home/workload/.astrabox/token.json"})
        self.assertNotIn("was_sync", v)

    def test_user_action_state_sync_override(self):
        reply = self.h.call("read_user_actions", {"context": {"session_id": "s", "owner_id": "o", "agent_id": "a"}})
        v = reply["value"]
        self.assertEqual(v["type"], "SessionUserActionState")
        self.assertIs(v["ready"], False)
        self.assertEqual(v["actions"], [{"id": "check", "label": "Check"}])
        self.assertEqual(v["user_action"]["message"], "Consent please")
        self.assertEqual(v["user_action"]["problems"], [])
        self.assertIs(v["was_sync"], True)

    def test_synchronize_context_from_json(self):
        args = {"context": {
            "operation": {"agent_id": "agent-1", "operation_id": "op-1", "deadline": 1e12},
            "creator_user_id": "u", "config_version": 3, "preparation_id": "prep", "runtime_generation": "g",
            "config": {"tags": ["a", "b"], "nested": {"x": 1}},
            "sandbox": {"sandbox_id": "sb-2", "home": "/home/workload", "workspace": "/ws"},
            "packages": [{"source": {"git": "https://example/x"}, "path": "/cache/x"}],
            "skills_path": None,
        }}
        seen = []

        def answer(msg):
            seen.append((msg["op"], msg["path"], msg["sandbox_id"]))
            return {"ok": True, "value": ["SKILL.md"], "error": None}

        reply = self.h.call("synchronize", args, sandbox=answer)
        self.assertEqual(reply["value"]["type"], "none")
        self.assertEqual(seen, [("list_dir", "/cache/x", "sb-2")])
        messages = [l["message"] for l in reply["observations"]["logs"]]
        self.assertEqual(messages, ["sync mappingproxy tuple tuple mappingproxy agent-1 sb-2 None ('SKILL.md',)"])

    def test_recover_bool_and_default_perform(self):
        op = {"agent_id": "a", "operation_id": "done", "deadline": 1.0}
        self.assertEqual(self.h.call("recover", {"operation": op})["value"]["value"], True)
        op["operation_id"] = "other"
        self.assertEqual(self.h.call("recover", {"operation": op})["value"]["value"], False)
        reply = self.h.call("perform_user_action", {"context": {"session_id": "s", "owner_id": "o", "agent_id": "a"},
                                                    "action_id": "x"})
        self.assertEqual(reply["error"]["type"], "NotImplementedError")
        self.assertEqual(reply["error"]["frames"], [])  # the SDK's frames are not the provider's

    def test_config_is_deep_read_only(self):
        reply = self.plan("frozen-config")
        self.assertEqual(reply["error"]["type"], "TypeError")
        self.assertIn("mappingproxy", reply["error"]["message"])

    def test_bad_arguments_and_unknown_method(self):
        reply = self.h.call("prepare_session", {"context": {"session_id": "x"}})
        self.assertEqual(reply["error"]["type"], "astrabox.harness.ArgumentError")
        self.assertIn("agent_id", reply["error"]["message"])
        self.assertEqual(self.h.call("frobnicate", {})["error"]["type"], "astrabox.harness.UnknownMethod")

    # -- errors ------------------------------------------------------------------------------------------

    def test_exception_frames(self):
        e = self.plan("raise")["error"]
        self.assertEqual(e["type"], "fixprov.good.TokenError")
        self.assertEqual(e["message"], "the token service said no")
        self.assertFalse(e["cancelled"])
        self.assertIsNone(e["user_action"])
        self.assertEqual(e["frames"], [
            {"file": GOOD, "line": marker_line(GOOD, "RAISE_CALL"), "function": "plan"},
            {"file": GOOD, "line": marker_line(GOOD, "RAISE_LINE"), "function": "fail_deep"},
        ])
        self.assertIn("TokenError: the token service said no", e["traceback"])

    def test_user_action_error(self):
        e = self.h.call("prepare_session", session_args("user-action"))["error"]
        self.assertEqual(e["type"], "astrabox.seams.PreparationUserActionRequired")
        self.assertEqual(e["user_action"], {"message": "Sign in first", "url": "https://id.example/consent",
                                            "status": "pending", "problems": []})
        bad = self.h.call("prepare_session", session_args("bad-user-action"))["error"]["user_action"]
        self.assertEqual(len(bad["problems"]), 4, bad["problems"])

    def test_odd_exceptions_do_not_break_the_harness(self):
        e = self.plan("badstr")["error"]
        self.assertEqual(e["message"], "<str() raised RuntimeError>")
        v = self.plan("badrepr")["value"]
        self.assertEqual(v["repr"], "<fixprov.good.BadRepr object; repr() raised RuntimeError>")
        e = self.plan("huge")["error"]
        self.assertLess(len(e["message"]), 9000)
        self.assertIn("truncated", e["message"])
        e = self.plan("recursion")["error"]
        self.assertEqual(e["type"], "RecursionError")
        self.assertTrue(self.plan("default")["ok"])  # still serving

    def test_system_exit_ends_the_process(self):
        # On the platform's asyncio host SystemExit from a callback ends the process: the harness replies,
        # saying so, and exits with the code.
        with Harness() as h:
            h.hello()
            self.assertTrue(h.load("fixprov.good:Good")["ok"])
            reply = h.call("plan", {"config": {"mode": "system-exit"}})
            self.assertEqual(reply["error"]["type"], "SystemExit")
            self.assertEqual(reply["exit"], {"exception": "SystemExit", "code": 3})
            self.assertEqual(h.proc.wait(timeout=10), 3)

    def test_cancel_a_sleeping_coroutine(self):
        def cancel_when_sleeping(call_id):
            wait_for(lambda: b"sleeping now" in self.h.stdout.text(), "the provider to sleep")
            self.h.send({"kind": "cancel", "id": call_id})

        reply = self.h.call("prepare_session", session_args("sleep"), on_sent=cancel_when_sleeping)
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["type"].rsplit(".", 1)[-1], "CancelledError")
        self.assertIs(reply["error"]["cancelled"], True)
        self.assertIn({"file": GOOD, "line": marker_line(GOOD, "SLEEP_LINE"), "function": "prepare_session"},
                      reply["error"]["frames"])
        # Go's grace runs once its cancel reached the call: the end of the callback's code is said at once, even
        # with the deadline (10 s) far away.
        self.assertReturnedFirst(self.h.last_kinds)

    def test_self_cancel_is_not_a_host_cancel(self):
        e = self.h.call("prepare_session", session_args("self-cancel"))["error"]
        self.assertEqual(e["type"].rsplit(".", 1)[-1], "CancelledError")
        self.assertIs(e["cancelled"], False)

    # -- sandbox -----------------------------------------------------------------------------------------

    def test_sandbox_round_trip(self):
        files = {}

        def answer(msg):
            op, path = msg["op"], msg["path"]
            if op == "write_file":
                files[path] = msg["content_b64"]
                self.assertEqual(msg["mode"], 0o600)
                return {"ok": True, "value": None, "error": None}
            if op == "read_file" and path in files:
                return {"ok": True, "value": {"content_b64": files[path]}, "error": None}
            if op == "read_file":
                return {"ok": False, "value": None, "error": {"type": "FileNotFoundError", "message": "gone: " + path}}
            if op == "exists":
                return {"ok": True, "value": path in files, "error": None}
            if op == "list_dir":
                return {"ok": True, "value": ["state"], "error": None}
            raise AssertionError(op)

        turn = {"context": {"session_id": "s", "agent_id": "a", "principal_id": "p", "dispatch_attempt_id": "d1",
                            "runtime_generation": "g", "deadline": 1e12, "refresh": False,
                            "sandbox_handle": {"sandbox_id": "sb-9", "home": "/home/workload", "workspace": "/ws"},
                            "file_paths_dir": "/home/workload/.astrabox"}}
        start = len(self.h.sandbox_requests)
        reply = self.h.call("prepare_turn", turn, sandbox=answer)
        self.assertTrue(reply["ok"], reply)
        requests = self.h.sandbox_requests[start:]
        self.assertEqual([r["op"] for r in requests], ["write_file", "read_file", "exists", "list_dir", "read_file"])
        self.assertTrue(all(r["call"] == reply["id"] and r["sandbox_id"] == "sb-9" for r in requests))
        self.assertEqual(len({r["id"] for r in requests}), 5)
        echo = base64.b64decode(reply["value"]["files"][0]["content_b64"])
        self.assertEqual(echo, b"v1|(True, ('state',), 'gone: /home/workload/missing')")

    # -- observations ------------------------------------------------------------------------------------

    def test_logs_from_a_non_propagating_logger(self):
        reply = self.plan("log")
        logs = reply["observations"]["logs"]
        self.assertEqual(len(logs), 1, logs)
        log = logs[0]
        self.assertEqual((log["logger"], log["level"], log["levelno"], log["message"]),
                         ("fixprov.quiet", "WARNING", 30, "hello world"))
        self.assertEqual((log["file"], log["function"], log["call"], log["after_return"]),
                         (GOOD, "plan", reply["id"], False))

    def test_warning(self):
        reply = self.plan("warn")
        warns = reply["observations"]["warnings"]
        self.assertEqual(len(warns), 1, warns)
        self.assertEqual(warns[0]["category"], "UserWarning")
        self.assertEqual(warns[0]["message"], "careful now")
        self.assertEqual((warns[0]["file"], warns[0]["line"]), (GOOD, marker_line(GOOD, "WARN_LINE")))
        self.assertEqual((warns[0]["call"], warns[0]["after_return"]), (reply["id"], False))

    def test_audit_open_attributed_to_provider_line(self):
        target = os.path.join(FIXTURES, "data.txt")
        reply = self.plan("open", path=target)
        opens = [a for a in reply["observations"]["audit"] if a["event"] == "open"]
        self.assertEqual(len(opens), 1, reply["observations"]["audit"])
        self.assertRegex(opens[0]["summary"], "^" + re.escape(target) + " rb?$")  # mode as the event gives it
        self.assertEqual((opens[0]["file"], opens[0]["line"], opens[0]["function"]),
                         (GOOD, marker_line(GOOD, "OPEN_LINE"), "plan"))
        self.assertEqual(opens[0]["call"], reply["id"])

    def test_leftover_task_and_timer(self):
        reply = self.h.call("prepare_session", session_args("task"))
        left = reply["observations"]["leftovers"]
        self.assertEqual([(t["name"], t["coro"]) for t in left["tasks"]], [("forever-task", "fixprov.good.forever")])
        self.assertEqual([t["callback"] for t in left["timers"]], ["fixprov.good.tick"])
        self.assertGreater(left["timers"][0]["when_s"], 0)
        # Already alive before the next call: not reported again.
        again = self.h.call("prepare_session", session_args("plain"))
        self.assertEqual(again["observations"]["leftovers"]["tasks"], [])

    def test_leftover_thread_and_after_return_logs(self):
        reply = self.plan("thread")
        threads = reply["observations"]["leftovers"]["threads"]
        self.assertEqual(len(threads), 1, threads)
        self.assertEqual((threads[0]["name"], threads[0]["target"], threads[0]["file"]),
                         ("lingerer", "fixprov.good.linger", GOOD))
        self.assertIs(threads[0]["daemon"], True)
        release = self.plan("release")  # lets the thread log, after its own call replied
        self.assertEqual([l for l in release["observations"]["logs"] if l["message"] == "left behind after return"], [])
        bg = self.h.wait_background(lambda m: any(l["message"] == "left behind after return"
                                                  for l in m["observations"]["logs"]))
        log = [l for l in bg["observations"]["logs"] if l["message"] == "left behind after return"][0]
        self.assertEqual((log["call"], log["after_return"], log["thread"]), (reply["id"], True, "lingerer"))

    def test_leftover_timer_thread_names_its_function(self):
        reply = self.plan("timer")
        try:
            threads = reply["observations"]["leftovers"]["threads"]
            self.assertEqual([(t["target"], t["file"]) for t in threads], [("fixprov.good.tick", GOOD)])
        finally:
            self.plan("cancel-timers")

    def test_leftover_child_process(self):
        reply = self.plan("child")
        children = reply["observations"]["leftovers"]["children"]
        try:
            self.assertEqual(len(children), 1, children)
            self.assertEqual(children[0]["cmdline"], "sleep 60")
            # sleep opens and closes locale files (/etc/locale.alias ...) as it starts, on whatever descriptor
            # is free: a leaked protocol descriptor is one that stays open, so wait (bounded) for 3 and 4 to close.
            pid, deadline = children[0]["pid"], time.monotonic() + WAIT
            fds = set(os.listdir("/proc/%d/fd" % pid))
            while fds & {"3", "4"} and time.monotonic() < deadline:
                time.sleep(0.01)
                fds = set(os.listdir("/proc/%d/fd" % pid))
            self.assertFalse(fds & {"3", "4"}, "protocol descriptors leaked into a child: %s" % sorted(fds))
            popen = [a for a in reply["observations"]["audit"] if a["event"] == "subprocess.Popen"]
            self.assertEqual(popen[0]["summary"], "sleep 60")
            self.assertEqual(popen[0]["line"], marker_line(GOOD, "POPEN_LINE"))
        finally:
            for child in children:
                os.kill(child["pid"], signal.SIGKILL)

    def test_leftover_executor_job_carries_the_call(self):
        reply = self.h.call("prepare_session", session_args("executor"))
        try:
            jobs = reply["observations"]["leftovers"]["threads"]
            self.assertEqual([(j["name"], j["target"]) for j in jobs], [("executor job", "fixprov.good.blocking_job")])
            logs = [l for l in reply["observations"]["logs"] if l["message"] == "in executor"]
            self.assertEqual(len(logs), 1, reply["observations"]["logs"])
            self.assertEqual((logs[0]["call"], logs[0]["after_return"]), (reply["id"], False))
        finally:
            self.plan("release2")

    def test_audit_http_summary_hides_secrets(self):
        reply = self.plan("http")
        audit = reply["observations"]["audit"]
        events = [a["event"] for a in audit]
        self.assertIn("socket.connect", events)
        for a in audit:
            for secret in ("query-secret", "body-secret", "header-secret", "Bearer"):
                self.assertNotIn(secret, a["summary"])
        connect = [a for a in audit if a["event"] == "socket.connect"][0]
        self.assertEqual((connect["file"], connect["function"]), (GOOD, "http_post"))
        if sys.version_info >= (3, 10):  # the http.client events exist from 3.10
            sends = [a for a in audit if a["event"] == "http.client.send"]
            self.assertEqual([a["summary"] for a in sends], ["POST /v1/token"])
            self.assertEqual(sends[0]["line"], marker_line(GOOD, "HTTP_LINE"))
            self.assertEqual(sends[0]["function"], "http_post")

    def test_audit_urllib_summary_drops_credentials_and_query(self):
        audit = self.plan("urllib")["observations"]["audit"]
        requests = [a["summary"] for a in audit if a["event"] == "urllib.Request"]
        self.assertEqual(requests, ["GET http://127.0.0.1:9/path"])

    def test_audit_time_sleep_on_313(self):
        reply = self.plan("sleepy")
        sleeps = [a for a in reply["observations"]["audit"] if a["event"] == "time.sleep"]
        if sys.version_info >= (3, 13):
            self.assertEqual([(a["summary"], a["line"]) for a in sleeps], [("0", marker_line(GOOD, "SLEEPY_LINE"))])
        else:
            self.assertEqual(sleeps, [])  # no such event before 3.13

    def test_bounds_and_dropped(self):
        obs = self.plan("flood")["observations"]
        self.assertEqual(len(obs["logs"]), 1000)
        long = obs["logs"][0]["message"]
        self.assertTrue(long.startswith("z" * 8192) and "truncated" in long and len(long) < 8300, len(long))
        self.assertEqual(obs["logs"][1]["message"], "record 0")
        self.assertEqual(obs["dropped"], 501)
        obs = self.plan("default")["observations"]
        self.assertEqual(obs["dropped"], 0)

    def test_plain_call_observes_nothing(self):
        reply = self.plan("default")
        obs = reply["observations"]
        self.assertEqual((obs["logs"], obs["warnings"], obs["audit"], obs["dropped"]), ([], [], [], 0))
        self.assertEqual(obs["leftovers"], {"threads": [], "tasks": [], "timers": [], "children": []})

    def test_background_sent_while_idle(self):
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            flag = os.path.join(tmp, "go")
            reply = self.plan("idle-log", flag=flag)
            open(flag, "w").close()  # only now may the provider's thread log
            bg = self.h.wait_background(
                lambda m: any(l["message"] == "logged while idle" for l in m["observations"]["logs"]))
        log = [l for l in bg["observations"]["logs"] if l["message"] == "logged while idle"][0]
        self.assertEqual((log["call"], log["after_return"]), (reply["id"], True))

    def test_sync_marker_on_stdout_and_stderr(self):
        reply = self.plan("print")
        marker = b"\n\x00astrabox-sync:%s:%d\x00\n" % (self.h.cookie.encode(), reply["id"])
        previous = b"\n\x00astrabox-sync:%s:%d\x00\n" % (self.h.cookie.encode(), reply["id"] - 1)
        wait_for(lambda: marker in self.h.stdout.text() and marker in self.h.stderr.text(), "both sync markers")
        out = self.h.stdout.text()
        segment = out[out.index(previous) + len(previous):out.index(marker)]
        self.assertEqual(segment, b"printed by plan\n")


class MarkerTest(unittest.TestCase):
    """Sync markers are skipped only when nothing but the harness wrote (a fresh harness: no child ever ran)."""

    def setUp(self):
        self.h = Harness()
        self.h.hello()
        reply = self.h.load("fixprov.good:Good")
        assert reply["ok"], reply

    def tearDown(self):
        self.h.close()

    def plan(self, mode, **config):
        config["mode"] = mode
        return self.h.call("plan", {"config": config})

    def segment(self, text, call_id):
        """The bytes of a stream between the markers before and of ``call_id`` (markers may be skipped)."""
        marker = b"\n\x00astrabox-sync:%s:%d\x00\n" % (self.h.cookie.encode(), call_id)
        end = text.index(marker)
        start = text.rfind(b"\x00\n", 0, end)
        return text[start + 2 if start >= 0 else 0:end]

    def test_quiet_calls_skip_the_markers(self):
        self.plan("default")
        quiet = self.plan("default")
        self.assertIs(quiet["markers"], False)
        wrote = self.plan("oswrite")
        self.assertIs(wrote["markers"], True)
        marker = b"astrabox-sync:%s:%d\x00" % (self.h.cookie.encode(), wrote["id"])
        wait_for(lambda: marker in self.h.stdout.text() and marker in self.h.stderr.text(), "both sync markers")
        self.assertEqual(self.segment(self.h.stdout.text(), wrote["id"]), b"written by plan\n")
        self.assertIs(self.plan("default")["markers"], False)

    def test_a_write_between_calls_brings_the_markers_back(self):
        import tempfile

        self.plan("default")
        with tempfile.TemporaryDirectory() as tmp:
            flag = os.path.join(tmp, "go")
            self.assertIs(self.plan("idle-write", flag=flag)["markers"], False)
            open(flag, "w").close()  # only now does the provider's thread write, while the harness is idle
            reply = self.plan("wrote")
        self.assertTrue(reply["value"]["declaration"]["wrote"])
        self.assertIs(reply["markers"], True)
        marker = b"astrabox-sync:%s:%d\x00" % (self.h.cookie.encode(), reply["id"])
        wait_for(lambda: marker in self.h.stderr.text(), "the stderr marker")
        self.assertEqual(self.segment(self.h.stderr.text(), reply["id"]), b"written while idle\n")


if __name__ == "__main__":
    unittest.main()
