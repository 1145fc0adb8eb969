"""A provider whose behaviour is chosen by the identifiers the platform hands it, so that one provider can
drive every platform clause test of the simulator. Standard library only.

- plan: session_bound from config["probe"]["bound"] (default True); the declaration echoes what plan saw. With
  config["probe"]["churn"], the declaration changes on every call (a PLAN-STABLE breach the platform must
  survive by invalidating inventory).
- synchronize: agent IDs containing "raise" raise, "sleep" sleep past any deadline; otherwise the context is
  echoed to the deployment double as PUT /v1/records/sync/{agent_id} (marked with the operation id), after
  reading the prepared package checkout through the sandbox handle.
- recover: fences the operation at the double and returns True.
- prepare_session: principal "raiser" raises, "ua-at-start" raises PreparationUserActionRequired, "noenv"
  returns files only; otherwise token.json and session.json (an echo of the context) and one environment
  variable naming token.json.
- prepare_turn: the attempt ID's prefix picks the behaviour (raise, sleep, selfcancel, env, badua, ua, tiny,
  valid, refreshfail, inspect, reread); anything else returns token.json.
- read_user_actions / perform_user_action: owner "uaraise" raises, "needs-action" is pending with one action
  "check", "unknown" has status unknown; others are ready.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import urllib.request

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)

_plans = [0]


def _double(method, path, body=None, headers=None):
    url = os.environ["ASTRABOX_DOUBLE_URL"] + path
    data = None if body is None else json.dumps(body, sort_keys=True).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=20) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def _digest(*parts):
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


class Probe(RuntimePreparationProvider):
    name = "probe"

    def plan(self, *, config):
        probe = config.get("probe") or {}
        _plans[0] += 1
        declaration = {
            "model": (config.get("agent") or {}).get("model"),
            "keys": sorted(config.keys()),
            "resolved": "${" not in json.dumps(dict(config), default=str),
        }
        if probe.get("churn"):
            declaration["churn"] = _plans[0]
        return RuntimePreparationPlan(session_bound=bool(probe.get("bound", True)), declaration=declaration)

    async def synchronize(self, *, context):
        agent = context.operation.agent_id
        if "raise" in agent:
            raise RuntimeError("synchronize failed on purpose")
        if "sleep" in agent:
            await asyncio.sleep(30)
        checkouts = []
        for pkg in context.packages:
            raw = await context.sandbox.read_file(pkg.path + "/plugin.json")
            checkouts.append({"path": pkg.path, "name": json.loads(raw)["name"], "source": dict(pkg.source)})
        skills = None
        if context.skills_path is not None:
            skills = list(await context.sandbox.list_dir(context.skills_path))
        echo = {
            "agent_id": agent,
            "operation_id": context.operation.operation_id,
            "deadline_set": context.operation.deadline > 0,
            "creator_user_id": context.creator_user_id,
            "config_version": context.config_version,
            "preparation_id": context.preparation_id,
            "runtime_generation": context.runtime_generation,
            "config_keys": sorted(context.config.keys()),
            "sandbox_id": context.sandbox.sandbox_id,
            "packages": checkouts,
            "skills_path": context.skills_path,
            "skills": skills,
        }
        _double("PUT", "/v1/records/sync/" + agent, {"value": echo},
                {"X-Astrabox-Operation": context.operation.operation_id})

    async def recover(self, *, operation):
        _double("POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": operation.operation_id})
        return True

    async def prepare_session(self, *, context):
        who = context.principal_id
        if who == "raiser":
            raise RuntimeError("prepare_session exploded: probe-internal-detail")
        if who == "ua-at-start":
            raise PreparationUserActionRequired(message="Complete consent first.", url="https://identity.example/consent")
        token = _digest("session", context.session_id, who).encode()
        echo = {
            "session_id": context.session_id,
            "agent_id": context.agent_id,
            "principal_id": who,
            "config_keys": sorted(context.config.keys()),
            "runtime_generation": context.runtime_generation,
            "sandbox_id": context.sandbox_id,
            "workload_subject": context.workload_identity.subject,
            "workload_token_set": bool(context.workload_identity.token),
            "trigger": context.trigger,
            "token_path": context.file_path("token.json"),
        }
        files = (RuntimeFile("token.json", token), RuntimeFile("session.json", json.dumps(echo, sort_keys=True).encode()))
        if who == "noenv":
            return RuntimeMaterials(files=files)
        return RuntimeMaterials(files=files, environment={"PROBE_TOKEN_FILE": context.file_path("token.json")})

    async def prepare_turn(self, *, context):
        attempt = context.dispatch_attempt_id
        token = RuntimeFile("token.json", _digest("turn", attempt, str(context.refresh)).encode())
        if attempt.startswith("raise"):
            raise RuntimeError("prepare_turn exploded: probe-internal-detail")
        if attempt.startswith("sleep"):
            await asyncio.sleep(30)
        if attempt.startswith("selfcancel"):
            raise asyncio.CancelledError()
        if attempt.startswith("env"):
            return RuntimeMaterials(files=(token,), environment={"PROBE_LATE": "x"})
        if attempt.startswith("badua"):
            raise PreparationUserActionRequired(message="Go elsewhere.", url="ftp://identity.example/consent")
        if attempt.startswith("ua"):
            consent = _double("GET", "/v1/consents/" + context.principal_id)
            if consent["status"] != "granted":
                raise PreparationUserActionRequired(message="Complete consent first.", url="https://identity.example/consent")
        if attempt.startswith("tiny"):
            return RuntimeMaterials(files=(token,), turn_validity_seconds=1.0)
        if attempt.startswith("valid"):
            return RuntimeMaterials(files=(token,), turn_validity_seconds=300.0)
        if attempt.startswith("refreshfail"):
            if context.refresh:
                raise RuntimeError("refresh failed on purpose")
            return RuntimeMaterials(files=(token,), turn_validity_seconds=300.0)
        if attempt.startswith("inspect"):
            # Read back what prepare_session delivered and leave provider state for the next turn.
            seen = await context.sandbox_handle.read_file(context.file_path("session.json"))
            await context.sandbox_handle.write_file(context.sandbox_handle.home + "/.probe-state", seen[:16])
            return RuntimeMaterials()
        if attempt.startswith("reread"):
            await context.sandbox_handle.read_file(context.sandbox_handle.home + "/.probe-state")
            return RuntimeMaterials()
        return RuntimeMaterials(files=(token,))

    async def read_user_actions(self, *, context):
        owner = context.owner_id
        if owner == "uaraise":
            raise RuntimeError("state service down: probe-internal-detail")
        if owner == "needs-action":
            return SessionUserActionState(
                ready=False,
                user_action={"status": "pending", "message": "Complete consent.", "url": "https://identity.example/consent"},
                actions=(SessionUserActionCommand("check", "Check consent"),),
            )
        if owner == "unknown":
            return SessionUserActionState(ready=False, user_action={"status": "unknown", "message": "Checking consent."})
        return SessionUserActionState(ready=True)

    async def perform_user_action(self, *, context, action_id):
        return await self.read_user_actions(context=context)
