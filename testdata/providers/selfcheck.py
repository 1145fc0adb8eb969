"""Self-check of the provider fixtures, independent of the astrabox kit.

Runs one small, fixed lifecycle against every fixture under ``correct/`` and ``broken/`` (and the reference
provider) with the reference tests' in-process deployment double, applies a rough detector per provider
clause, and compares what it detected with the fixture's ``expect.json``: a correct fixture must trip
nothing; a broken fixture must trip its clause and nothing outside ``fails`` + ``may_also_fail`` (+
``explore_fails``, which it may or may not trip).

This is a sanity net for the fixtures themselves (does each breakage really show, is everything else
really correct?), not a substitute for the kit's checks: replicas are separate provider instances in one
process, and the detectors are deliberately simple.

    PYTHONPATH=internal/harness/python python3 testdata/providers/selfcheck.py [fixture-dir ...]

Each fixture runs in its own subprocess (``--one DIR``) with a hard timeout. Exit status 0 when every
fixture behaves as its expect.json says.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Optional, Set
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(MAIN, "examples", "providers", "reference")
GROUP = "astrabox.providers.runtime_preparation"
RESERVED = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "LANG", "LC_ALL", "TERM"}
RESERVED_PREFIXES = ("ASTRABOX_", "CLAUDE_CODE_", "ANTHROPIC_")

DETECTED: Set[str] = set()
NOTES: List[str] = []


def flag(clause: str, why: str) -> None:
    DETECTED.add(clause)
    note = "%s: %s" % (clause, why)
    if note not in NOTES:
        NOTES.append(note)


def finish() -> None:
    sys.stdout.write(json.dumps({"detected": sorted(DETECTED), "notes": NOTES}) + "\n")
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------------------------------------------------
# discovery


def read_pyproject(directory: str) -> Dict[str, Any]:
    path = os.path.join(directory, "pyproject.toml")
    try:
        import tomllib  # type: ignore[import-not-found]

        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except ImportError:
        pass
    # Python < 3.11: a tiny reader for the shapes these fixtures use (tables, strings, string lists).
    data: Dict[str, Any] = {}
    table: Dict[str, Any] = data
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                table = data
                for part in _split_key(line.strip("[]")):
                    table = table.setdefault(part, {})
                continue
            key, _, value = line.partition("=")
            table[key.strip().strip('"')] = json.loads(value.strip()) if value.strip()[:1] in '"[' else value.strip()
    return data


def _split_key(text: str) -> List[str]:
    parts, current, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def load(directory: str):
    project = read_pyproject(directory)
    groups = project.get("project", {}).get("entry-points", {})
    entries = groups.get(GROUP, {})
    for group in groups:
        if group != GROUP and group.lower().replace("-", "_").replace(".", "_") == GROUP.replace(".", "_"):
            flag("EP-GROUP", "entry points in the near-miss group %r are ignored by the platform" % group)
    if not entries:
        flag("EP-GROUP", "no entry point in %s (groups: %s)" % (GROUP, ", ".join(groups)))
        entries = next(iter(groups.values()), {})
    target = next(iter(entries.values()))
    roots = [os.path.join(directory, "src") if os.path.isdir(os.path.join(directory, "src")) else directory]
    for extra in project.get("tool", {}).get("astrabox", {}).get("python-path", []):
        roots.append(os.path.normpath(os.path.join(directory, extra)))
    sys.path[:0] = roots
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    from astrabox.seams import RuntimePreparationProvider

    if not (isinstance(cls, type) and issubclass(cls, RuntimePreparationProvider)):
        flag("EP-SUBCLASS", "%s is not a RuntimePreparationProvider subclass" % target)
    return cls


# ---------------------------------------------------------------------------------------------------------
# observation helpers


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:
            self.messages.append(str(record.msg))


IO_EVENTS = {"open", "socket.connect", "subprocess.Popen", "os.system", "time.sleep", "urllib.Request"}
AUDIT = {"on": False, "events": []}


def audit_hook(event: str, args: Any) -> None:
    if AUDIT["on"] and event in IO_EVENTS:
        if event == "open" and isinstance(args[0], str) and args[0].endswith((".py", ".pyc", ".so")):
            return
        AUDIT["events"].append(event)


def needles(values) -> List[str]:
    found = []
    for value in values:
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                continue
        if isinstance(value, str) and len(value) >= 8:
            found.extend({value, quote(value, safe=""), json.dumps(value)[1:-1]})
    return found


def leaks(text: str, secrets: List[str]) -> bool:
    return any(s in text for s in secrets)


# ---------------------------------------------------------------------------------------------------------
# the lifecycle


class Run:
    def __init__(self, cls, support, seams) -> None:
        self.cls = cls
        self.support = support
        self.seams = seams
        self.double = support.Double().__enter__()
        os.environ["ASTRABOX_DOUBLE_URL"] = self.double.url
        self.config = support.config(self.double.url)
        self.capture = Capture()
        logging.getLogger().addHandler(self.capture)
        logging.getLogger().setLevel(logging.DEBUG)
        self.errors: List[str] = []
        self.user_actions: List[Dict[str, Any]] = []
        self.states: List[Any] = []
        self.delivered: Dict[str, List[Any]] = {}
        self.session_names: Set[str] = set()
        self.pending_signalled: Set[str] = set()
        self.bob_turn_passed = False
        self.session_bound = False
        self.in_flight = False
        self.heartbeat = time.time()

    def secrets(self) -> List[str]:
        values: List[Any] = list(self.config["secrets"].values()) + ["canary-workload-7c3b"] + self.double.issued
        for items in self.delivered.values():
            for materials in items:
                values.extend(f.content for f in materials.files)
        return needles(values)

    async def call(self, what: str, coro_factory, timeout: float = 8.0):
        self.in_flight = True
        try:
            return await asyncio.wait_for(coro_factory(), timeout)
        except self.seams.PreparationUserActionRequired as exc:
            self.user_actions.append({"message": exc.message, "url": exc.url, "status": exc.status})
            raise
        except asyncio.TimeoutError:
            flag("GEN-SETTLES" if what != "prepare_turn" else "TURN-WITHIN-DEADLINE", "%s did not settle" % what)
            raise
        except Exception as exc:
            self.errors.append("%s\n%r\n%s" % (exc, exc, "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))))
            raise
        finally:
            self.in_flight = False

    async def beat(self) -> None:
        while True:
            self.heartbeat = time.time()
            await asyncio.sleep(0.05)

    def watchdog(self) -> None:
        while True:
            time.sleep(0.2)
            if self.in_flight and time.time() - self.heartbeat > 3.0:
                flag("GEN-SETTLES", "the event loop was blocked for more than 3 s inside a callback")
                finish()

    # -- phases ------------------------------------------------------------------------------------------

    def identity(self, r1, r2) -> None:
        declared = self.cls.__dict__.get("name", getattr(self.cls, "name", None))
        for base in self.cls.__mro__:
            if "name" in base.__dict__:
                declared = base.__dict__["name"]
                break
        if not isinstance(declared, str) or not declared or r1.name != r2.name:
            flag("EP-NAME", "name is not one non-empty class attribute string (%s)" % type(declared).__name__)

    def plan(self, r1, r2) -> None:
        plans = []
        for provider in (r1, r1, r2):
            AUDIT["on"] = True
            try:
                plan = provider.plan(config=self.config)
            finally:
                AUDIT["on"] = False
            if asyncio.iscoroutine(plan):
                plan.close()
                flag("PLAN-SYNC", "plan returned a coroutine")
                return
            plans.append(plan)
        if AUDIT["events"]:
            flag("PLAN-NO-IO", "I/O during plan: %s" % sorted(set(AUDIT["events"])))
        texts = [json.dumps(p.declaration, sort_keys=True) for p in plans]
        if len(set(texts)) != 1 or len({p.session_bound for p in plans}) != 1:
            flag("PLAN-STABLE", "the same config gave different plans")
        if leaks(texts[0], self.secrets()):
            flag("LEAK-PLAN", "a secret is in the declaration")
        self.session_bound = plans[0].session_bound

    def writes_between(self, start: int, end: Optional[int] = None):
        return [r for r in self.double.requests[start:end] if r["method"] in ("PUT", "POST", "DELETE")]

    async def synchronize(self, r1, r2) -> None:
        support = self.support
        returned = []
        sandboxes = []
        keys_by_version: Dict[int, Set[str]] = {1: set(), 2: set()}
        for provider, sandbox_id, op, version in ((r1, "sb-1", "op-1", 1), (r2, "sb-2", "op-2", 1), (r1, "sb-3", "op-3", 2)):
            sandbox = support.MemorySandbox(sandbox_id)
            sandboxes.append(sandbox)
            context = support.agent_context(self.double.url, sandbox, op, version)
            start = len(self.double.requests)
            await self.call("synchronize", lambda: provider.synchronize(context=context))
            returned.append((op, time.time()))
            writes = self.writes_between(start)
            keys_by_version[version].update(r["path"] for r in writes if r["path"].startswith("/v1/records/"))
            writes = [r for r in writes if r["headers"].get("X-Astrabox-Operation") in (None, op)]
            if op == "op-2" and writes:
                flag("SYNC-SKIP-UNCHANGED", "a second synchronize with the same inputs wrote %s" % writes[0]["path"])
        await asyncio.sleep(0.6)
        for op, at in returned:
            late = [r for r in self.double.requests if r["headers"].get("X-Astrabox-Operation") == op and r["at"] > at]
            if late:
                flag("SYNC-QUIESCENT", "%s wrote %s after synchronize returned" % (op, late[0]["path"]))
        if keys_by_version[1] and keys_by_version[2] and keys_by_version[1] != keys_by_version[2]:
            flag("SYNC-IDENTITY", "two Agent versions wrote different keys: %s" % sorted(keys_by_version[1] | keys_by_version[2]))
        if leaks("\n".join(self.capture.messages), needles([self.support.INSTRUCTIONS])):
            flag("SYNC-NO-LOG-CONFIG", "the instructions were logged")
        for sandbox in sandboxes:
            for path, (content, mode) in sandbox.files.items():
                if mode & 0o111 and not path.startswith("/cache/"):
                    flag("IMAGE-NO-RETROFIT", "executable %s written into the box" % path)
                if leaks(content.decode("utf-8", "replace"), self.secrets()):
                    flag("LEAK-INVENTORY", "a secret was written to %s in an unclaimed box" % path)

    async def recover(self, r1, r2) -> None:
        operation = self.seams.AgentPreparationOperation(agent_id="agent-1", operation_id="op-1", deadline=time.time() + 10)
        first = await self.call("recover", lambda: r1.recover(operation=operation))
        confirmed = "op-1" in self.double.fenced
        second = await self.call("recover", lambda: r2.recover(operation=operation))
        if first is True and not confirmed:
            flag("RECOVER-TRUTH", "recover answered True without a confirmed fence")
        if first != second:
            flag("RECOVER-IDEMPOTENT", "recover answered %r then %r" % (first, second))
        newer = self.double.fenced - {"op-1"}
        if newer:
            flag("RECOVER-NO-FENCE-NEWER", "recover fenced %s" % sorted(newer))

    def check_materials(self, principal: str, context, materials, turn: bool) -> None:
        seams = self.seams
        self.delivered.setdefault(principal, []).append(materials)
        names = [f.name for f in materials.files]
        text = repr(materials) + str(materials) + "".join(repr(f) for f in materials.files)
        secret_values = needles([f.content for f in materials.files] + list(dict(materials.environment).values()))
        if leaks(text, secret_values):
            flag("SESSION-REDACTION", "a representation shows material bytes or environment values")
        if turn:
            if dict(materials.environment):
                flag("TURN-FILES-ONLY", "prepare_turn returned an environment")
            if any(n not in self.session_names for n in names):
                flag("TURN-FILES-ONLY", "prepare_turn returned a name prepare_session did not deliver")
        else:
            self.session_names.update(names)
            if self.session_bound and not names and not dict(materials.environment):
                flag("BOUND-MATERIAL", "a session-bound provider returned no material")
        if len(set(names)) != len(names) or not all(seams.is_safe_file_name(n) for n in names):
            flag("SESSION-NAMES", "unsafe or duplicate names %r" % names)
        for key, value in dict(materials.environment).items():
            if key in RESERVED or key.startswith(RESERVED_PREFIXES):
                flag("SESSION-ENV-RESERVED", "returned %s" % key)
            for name in names:
                if seams.is_safe_file_name(name) and value.endswith("/" + name) and value != context.file_path(name):
                    flag("SESSION-FILE-PATH", "%s names %s without context.file_path" % (key, name))
        mine = [t for t, p in self.double.issued_for.items() if p == principal]
        others = needles([t for t, p in self.double.issued_for.items() if p != principal and t not in mine])
        for f in materials.files:
            if leaks(f.content.decode("utf-8", "replace"), others):
                flag("LEAK-CROSS-SESSION", "%s received another principal's credential" % principal)

    async def session(self, provider, principal: str, session_id: str):
        context = self.support.session_context(self.double.url, principal, session_id)
        try:
            materials = await self.call("prepare_session", lambda: provider.prepare_session(context=context))
        except self.seams.PreparationUserActionRequired:
            self.pending_signalled.add(principal)
            return None
        self.check_materials(principal, context, materials, turn=False)
        return materials

    async def turn(self, provider, principal: str, session_id: str, attempt: str, refresh: bool = False):
        context = self.support.turn_context(principal, attempt, refresh, session_id)
        try:
            materials = await self.call("prepare_turn", lambda: provider.prepare_turn(context=context))
        except self.seams.PreparationUserActionRequired:
            self.pending_signalled.add(principal)
            return None
        except Exception:
            return None
        if principal == "bob":
            self.bob_turn_passed = True
        self.check_materials(principal, context, materials, turn=True)
        return materials

    async def turns(self, r1, r2) -> None:
        await self.session(r1, "alice", "s-1")
        await self.turn(r1, "alice", "s-1", "a-0")  # a first turn; a provider may fail it
        first = await self.turn(r1, "alice", "s-1", "a-1")
        issued = len(self.double.issued)
        retry = await self.turn(r2, "alice", "s-1", "a-1")
        if first is not None and retry is not None:
            if [f.content for f in first.files] != [f.content for f in retry.files] or len(self.double.issued) != issued:
                flag("TURN-IDEMPOTENT", "a retry on another replica gave different material or issued a credential")
            refreshed = await self.turn(r1, "alice", "s-1", "a-1", refresh=True)
            if refreshed is not None and first.files and [f.content for f in refreshed.files] == [f.content for f in first.files]:
                flag("TURN-VALIDITY-FRESH", "a refresh returned the same bytes")

    async def cancellation(self, r1) -> None:
        double = self.double
        double.hold_credentials.clear()
        double.credential_arrived.clear()
        context = self.support.turn_context("alice", "a-cancel", False, "s-1", deadline_s=2.0)
        task = asyncio.ensure_future(r1.prepare_turn(context=context))
        await asyncio.to_thread(double.credential_arrived.wait, 2.0)
        held = double.credential_arrived.is_set()
        if not task.cancel():  # it had already finished: nothing to honour
            double.hold_credentials.set()
            return
        await asyncio.sleep(0.3)
        if held and task.done():
            pending = [r for r in double.requests if r["path"] == "/v1/credentials" and "status" not in r]
            if pending:
                flag("GEN-CANCEL-CLEAN", "prepare_turn ended while its credential request was still in flight")
        double.hold_credentials.set()
        try:
            await asyncio.wait_for(task, 5.0)
        except asyncio.CancelledError:
            return
        except asyncio.TimeoutError:
            flag("TURN-WITHIN-DEADLINE", "a cancelled prepare_turn did not end")
            return
        except Exception:
            return
        flag("TURN-WITHIN-DEADLINE", "a cancelled prepare_turn returned material instead of ending cancelled")

    async def user_actions_phase(self, r1, r2) -> None:
        seams = self.seams
        await self.session(r2, "bob", "s-bob")
        await self.turn(r2, "bob", "s-bob", "b-1")  # no state read anywhere yet
        context = self.support.ua_context("bob")
        state = await self.call("read_user_actions", lambda: r1.read_user_actions(context=context))
        self.states.append(state)
        if state.actions:
            action_id = state.actions[0].id
            start = len(self.double.requests)
            once = await self.call("perform_user_action", lambda: r1.perform_user_action(context=context, action_id=action_id))
            middle = len(self.double.requests)
            twice = await self.call("perform_user_action", lambda: r2.perform_user_action(context=context, action_id=action_id))
            self.states.extend([once, twice])
            first = {(r["method"], r["path"]) for r in self.writes_between(start, middle)}
            second = {(r["method"], r["path"]) for r in self.writes_between(middle)}
            if not second <= first:
                flag("UA-IDEMPOTENT", "repeating the action wrote %s" % sorted(second - first))
        for item in self.states:
            if item.ready is not True and item.ready is not False:
                flag("UA-STATE", "ready is not a bool")
            if item.ready is False and not item.user_action:
                flag("UA-STATE", "ready=False without a user_action")
            ids = [a.id for a in item.actions]
            if len(ids) != len(set(ids)):
                flag("UA-STATE", "duplicate action ids")
            if item.user_action:
                self.user_actions.append(dict(item.user_action))
                if item.ready is False:
                    self.pending_signalled.add("bob")
        for action in self.user_actions:
            if seams.validate_user_action(action.get("message"), action.get("url"), action.get("status")):
                flag("UA-VALID", "invalid user action")
            if leaks(json.dumps(action, default=str), self.secrets()):
                flag("LEAK-USER-ACTION", "a secret is in a user action")
        for item in self.states:
            if leaks(repr(item), self.secrets()):
                flag("LEAK-USER-ACTION", "a secret is in a user-action state")
        if "bob" in self.pending_signalled and self.bob_turn_passed:
            flag("UA-AUTHORITY", "a turn for bob passed while his prerequisite was pending")

    async def cross_session(self, r2) -> None:
        self.double.consents["carol"] = "granted"
        await self.session(r2, "carol", "s-carol")

    async def run(self) -> None:
        threading.Thread(target=self.watchdog, daemon=True).start()
        beat = asyncio.ensure_future(self.beat())
        r1, r2 = self.cls(), self.cls()
        self.identity(r1, r2)
        self.plan(r1, r2)
        steps = (
            lambda: self.synchronize(r1, r2),
            lambda: self.recover(r1, r2),
            lambda: self.turns(r1, r2),
            lambda: self.cancellation(r1),
            lambda: self.user_actions_phase(r1, r2),
            lambda: self.cross_session(r2),
        )
        for step in steps:
            try:
                await step()
            except Exception as exc:
                NOTES.append("step failed: %s: %s" % (type(exc).__name__, exc))
        for path in ("/v1/dispatch", "/v1/agents"):
            if any(r["path"] == path for r in self.double.requests):
                flag("GEN-NO-DISPATCH", "a callback called %s" % path)
        if any(r["path"].endswith("/flows") for r in self.double.requests):
            flag("GEN-NO-DISPATCH", "a callback started a consent flow")
        if leaks("\n".join(self.capture.messages), self.secrets()):
            flag("LEAK-LOG", "a secret reached the logs")
        if any(leaks(text, self.secrets()) for text in self.errors):
            flag("LEAK-ERROR", "a secret reached an exception's text")
        beat.cancel()


def run_one(directory: str) -> None:
    sys.path.insert(0, REFERENCE)
    from tests import support  # the reference tests' double and contexts
    from astrabox import seams

    sys.addaudithook(audit_hook)
    cls = load(directory)
    asyncio.run(Run(cls, support, seams).run())
    finish()


# ---------------------------------------------------------------------------------------------------------
# driver


def fixtures(arguments: List[str]) -> List[str]:
    if arguments:
        return [os.path.abspath(a) for a in arguments]
    found = [REFERENCE]
    for kind in ("correct", "broken"):
        base = os.path.join(HERE, kind)
        found.extend(os.path.join(base, n) for n in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, n)))
    return found


def expectation(directory: str) -> Dict[str, Any]:
    path = os.path.join(directory, "expect.json")
    if not os.path.exists(path):
        return {"fails": []}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def main(arguments: List[str]) -> int:
    if arguments[:1] == ["--one"]:
        run_one(arguments[1])
        return 0
    bad = 0
    for directory in fixtures(arguments):
        expect = expectation(directory)
        label = os.path.relpath(directory, MAIN)
        module = expect.get("requires_module")
        if module and subprocess.run([sys.executable, "-c", "import " + module], capture_output=True).returncode:
            print("SKIP %-50s (needs %s)" % (label, module))
            continue
        env = dict(os.environ)
        paths = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(paths or [os.path.join(MAIN, "internal", "harness", "python")])
        try:
            done = subprocess.run(
                [sys.executable, "-B", os.path.abspath(__file__), "--one", directory],
                capture_output=True, text=True, timeout=90, cwd=directory, env=env,
            )
            lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
            result = json.loads(lines[-1]) if lines else {"detected": ["?crash"], "notes": [done.stderr[-2000:]]}
        except subprocess.TimeoutExpired:
            result = {"detected": ["?timeout"], "notes": []}
        detected = set(result["detected"])
        fails = set(expect.get("fails", []))
        # explore_fails: breaches only some orders show; the fixed lifecycle here may or may not have one.
        allowed = fails | set(expect.get("may_also_fail", [])) | set(expect.get("explore_fails", []))
        ok = fails <= detected <= allowed
        bad += not ok
        print("%s %-50s detected=%s" % ("ok  " if ok else "FAIL", label, sorted(detected)))
        if not ok or os.environ.get("SELFCHECK_VERBOSE"):
            for note in result["notes"]:
                print("       " + note.replace("\n", "\n       "))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
