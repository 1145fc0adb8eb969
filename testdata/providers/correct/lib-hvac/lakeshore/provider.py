"""Lakeshore's runtime preparation provider (hvac, Vault KV v2).

Everything that must outlive a replica lives in Lakeshore's Vault (``kv`` mount, check-and-set on every write):

* ``sessions/<session>``: the principal and the consent URL of the deployment that prepared the Session;
* ``attempts/<session>/<attempt>``: the Vault token handed to one dispatch attempt (created once, ``cas=0``);
* ``agents/<agent>``: the Agent's inventory, rewritten only when it changed.

Session and turn tokens are child tokens from ``auth/token/create``. hvac is blocking, so every call runs in a
worker thread; a cancelled callback still waits for the call it started (``_in_thread``), so that no write
lands after the platform has moved on.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import hvac
import hvac.exceptions
import requests

from astrabox.seams import (
    AgentPreparationContext,
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionPreparationContext,
    SessionUserActionCommand,
    SessionUserActionContext,
    SessionUserActionState,
    TurnPreparationContext,
)

log = logging.getLogger("lakeshore.provider")

VAULT_ADDR = os.environ.get("LAKESHORE_VAULT_ADDR", "https://vault.lakeshore.example:8200")
MOUNT = "kv"
TOKEN_FILE = "lakeshore-vault.json"
TOKEN_TTL = 300
CONSENT_MESSAGE = "Allow Lakeshore's tools to act for you, then send your message again."
RECHECK = SessionUserActionCommand(id="recheck-consent", label="I have allowed it")


class LakeshoreError(RuntimeError):
    """Vault or the consent service answered something unusable."""


async def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a blocking hvac/requests call in a thread; on cancellation wait for it, then re-raise."""
    fut = asyncio.ensure_future(asyncio.to_thread(functools.partial(fn, *args, **kwargs)))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        await asyncio.wait([fut])
        raise


class LakeshoreProvider(RuntimePreparationProvider):
    """Session-bound; per-attempt Vault tokens kept in KV v2 with check-and-set."""

    name = "lakeshore-vault"

    def __init__(self) -> None:
        self.vault = hvac.Client(url=VAULT_ADDR, token=os.environ.get("VAULT_TOKEN"), timeout=5)
        self.http = requests.Session()
        self._consent_base: Optional[str] = None

    # ------------------------------------------------------------------ helpers

    def _remember(self, config: Mapping[str, Any]) -> Optional[str]:
        base = ((config or {}).get("deployment") or {}).get("base_url")
        if isinstance(base, str) and base.startswith(("http://", "https://")):
            self._consent_base = base.rstrip("/")
        return self._consent_base

    def _read(self, path: str) -> Tuple[int, Optional[Dict[str, Any]]]:
        try:
            answer = self.vault.secrets.kv.v2.read_secret_version(
                path=path, mount_point=MOUNT)
        except hvac.exceptions.InvalidPath:
            return 0, None
        return int(answer["data"]["metadata"]["version"]), answer["data"]["data"]

    def _write(self, path: str, data: Dict[str, Any], cas: int) -> bool:
        """Check-and-set write; False when another writer got there first."""
        try:
            self.vault.secrets.kv.v2.create_or_update_secret(path=path, secret=data, cas=cas, mount_point=MOUNT)
        except hvac.exceptions.InvalidRequest as exc:
            if "check-and-set" in str(exc):
                return False
            raise
        return True

    def _new_token(self, principal_id: str) -> Dict[str, Any]:
        auth = self.vault.auth.token.create(
            policies=["agent-tools"], ttl="%ds" % TOKEN_TTL, meta={"principal": principal_id}, renewable=False)["auth"]
        return {"token": auth["client_token"], "principal_id": principal_id,
                "expires_at": round(time.time() + auth["lease_duration"], 3)}

    def _consent(self, base: str, principal_id: str, check: bool = False) -> Dict[str, Any]:
        url = "%s/v1/consents/%s%s" % (base, principal_id, "/check" if check else "")
        resp = self.http.request("POST" if check else "GET", url, timeout=5)
        if resp.status_code != 200:
            raise LakeshoreError("consent service answered %d" % resp.status_code)
        return resp.json()

    async def _session(self, session_id: str) -> Dict[str, Any]:
        _, data = await _in_thread(self._read, "sessions/%s" % session_id)
        if not data:
            raise LakeshoreError("no Vault record for this Session")
        return data

    @staticmethod
    def _action(answer: Mapping[str, Any]) -> Dict[str, Any]:
        action = {"status": "pending" if answer.get("status") == "pending" else "unknown", "message": CONSENT_MESSAGE}
        if isinstance(answer.get("url"), str) and answer["url"].startswith(("http://", "https://")):
            action["url"] = answer["url"]
        return action

    async def _require_consent(self, base: str, principal_id: str) -> None:
        answer = await _in_thread(self._consent, base, principal_id)
        if answer.get("status") != "granted":
            action = self._action(answer)
            raise PreparationUserActionRequired(message=action["message"], url=action.get("url"), status=action["status"])

    @staticmethod
    def _file(doc: Mapping[str, Any]) -> RuntimeFile:
        return RuntimeFile(name=TOKEN_FILE, content=json.dumps(doc, sort_keys=True).encode())

    # ------------------------------------------------------------------ callbacks

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        self._remember(config)
        return RuntimePreparationPlan(session_bound=True, declaration={"vault": VAULT_ADDR, "mount": MOUNT})

    async def synchronize(self, *, context: AgentPreparationContext) -> None:
        self._remember(context.config)
        spec = {"agent_id": context.operation.agent_id, "config_version": context.config_version,
                "packages": sorted(str(p.source.get("name", "")) for p in context.packages)}
        path = self._agent_path(context)
        for _ in range(3):
            version, current = await _in_thread(self._read, path)
            if current == spec:
                log.info("agent %s: inventory unchanged", context.operation.agent_id)
                return
            if current and current.get("config_version", 0) > spec["config_version"]:
                return
            if await _in_thread(self._write, path, spec, version):
                log.info("agent %s: inventory written (version %d)", context.operation.agent_id, version + 1)
                return
        raise LakeshoreError("agent record kept changing")

    def _agent_path(self, context: AgentPreparationContext) -> str:
        return "agents/%s" % context.operation.agent_id

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        base = self._remember(context.config)
        if not base:
            raise LakeshoreError("the Agent configuration names no deployment.base_url")
        record = {"principal_id": context.principal_id, "consent_base": base}
        path = "sessions/%s" % context.session_id
        for _ in range(3):
            version, current = await _in_thread(self._read, path)
            if current == record or await _in_thread(self._write, path, record, version):
                break
        else:
            raise LakeshoreError("session record kept changing")
        await self._require_consent(base, context.principal_id)
        doc = await _in_thread(self._new_token, context.principal_id)
        log.info("session %s prepared for %s", context.session_id, context.principal_id)
        return RuntimeMaterials(files=(self._file(doc),),
                                environment={"LAKESHORE_VAULT_FILE": context.file_path(TOKEN_FILE)})

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        session = await self._session(context.session_id)
        await self._require_consent(self._consent_base or session["consent_base"], context.principal_id)
        path = "attempts/%s/%s" % (context.session_id, context.dispatch_attempt_id)
        version, stored = await _in_thread(self._read, path)
        fresh = stored and stored.get("expires_at", 0) - time.time() > 30
        if fresh and not context.refresh:
            doc = stored
        else:
            doc = await self._store_attempt(path, version, context)
        log.info("turn %s/%s ready", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(self._file(doc),), turn_validity_seconds=120.0)

    async def _store_attempt(self, path: str, version: int, context: TurnPreparationContext) -> Dict[str, Any]:
        doc = await _in_thread(self._new_token, context.principal_id)
        if await _in_thread(self._write, path, doc, version):
            return doc
        _, stored = await _in_thread(self._read, path)  # a retry elsewhere stored first
        if not stored:
            raise LakeshoreError("attempt record vanished")
        return stored

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        session = await self._session(context.session_id)
        answer = await _in_thread(self._consent, self._consent_base or session["consent_base"], context.owner_id)
        return self._state(answer)

    async def perform_user_action(self, *, context: SessionUserActionContext, action_id: str) -> SessionUserActionState:
        if action_id != RECHECK.id:
            raise ValueError("unknown action %r" % action_id)
        session = await self._session(context.session_id)
        answer = await _in_thread(self._consent, self._consent_base or session["consent_base"], context.owner_id, True)
        return self._state(answer)

    def _state(self, answer: Mapping[str, Any]) -> SessionUserActionState:
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, user_action=self._action(answer), actions=(RECHECK,))
