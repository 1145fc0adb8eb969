"""Brightwave runtime preparation provider.

One ``httpx.AsyncClient`` per provider instance (created in ``__init__``, as the httpx docs recommend: reuse
the pool), with transport-level retries for connection failures and our own retry loop for 502/503/504.
Every POST carries an ``Idempotency-Key`` derived from what it is about, so a retry — ours, httpx's or the
platform's on another replica — never issues twice. Writes are shielded: if the platform cancels us, the
request in flight still completes before we unwind.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any, Dict, Mapping, Optional

import httpx

from astrabox.seams import (
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

logger = logging.getLogger(__name__)

API = "https://api.brightwave.example"
CREDENTIAL_FILE = "brightwave.json"
RETRY_STATUSES = {502, 503, 504}
MAX_ATTEMPTS = 3
RECHECK = SessionUserActionCommand(id="recheck", label="Check again")
NEEDS_CONSENT = "Brightwave needs your consent before this Agent can use your account."


class BrightwaveError(Exception):
    pass


class BrightwaveProvider(RuntimePreparationProvider):
    name = "brightwave"

    def __init__(self) -> None:
        self.client = httpx.AsyncClient(
            base_url=API,
            transport=httpx.AsyncHTTPTransport(retries=2),
            timeout=httpx.Timeout(5.0),
            headers={"User-Agent": "brightwave-provider/3.1"},
        )
        self.deployment_url: Optional[str] = None

    # -- HTTP ---------------------------------------------------------------------------------------------

    async def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        """Send with our retry loop; a write keeps its Idempotency-Key across attempts."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            resp = await self.client.request(method, url, **kw)
            if resp.status_code not in RETRY_STATUSES or attempt == MAX_ATTEMPTS:
                return resp
            await asyncio.sleep(0.05 * attempt)
        raise AssertionError("unreachable")

    async def _write(self, method: str, url: str, *, key: str, json_body: Any) -> httpx.Response:
        """A write that finishes even if we are cancelled while it is in flight."""
        task = asyncio.ensure_future(self._send(method, url, json=json_body, headers={"Idempotency-Key": key}))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
            raise

    # -- consent (the deployment's API) --------------------------------------------------------------------

    def _remember(self, config: Mapping[str, Any]) -> Optional[str]:
        url = (config.get("deployment") or {}).get("base_url")
        if isinstance(url, str) and url:
            self.deployment_url = url.rstrip("/")
        return self.deployment_url

    async def _consent(self, base: str, principal: str, *, check: bool = False) -> Dict[str, Any]:
        url = f"{base}/v1/consents/{principal}" + ("/check" if check else "")
        resp = await self._send("POST" if check else "GET", url)
        resp.raise_for_status()
        return resp.json()

    async def _enforce(self, base: str, principal: str) -> None:
        answer = await self._consent(base, principal)
        if answer.get("status") != "granted":
            raise PreparationUserActionRequired(message=NEEDS_CONSENT, url=answer.get("url") or None,
                                                status="pending" if answer.get("status") == "pending" else "unknown")

    async def _session(self, session_id: str) -> Dict[str, Any]:
        resp = await self._send("GET", f"/v1/sessions/{session_id}")
        if resp.status_code != 200:
            raise BrightwaveError(f"session {session_id} is not registered ({resp.status_code})")
        return resp.json()

    # -- callbacks -----------------------------------------------------------------------------------------

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        return RuntimePreparationPlan(session_bound=True, declaration={"api": API, "v": 3})

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        base = self._remember(context.config)
        if not base:
            raise BrightwaveError("deployment.base_url is not configured")
        binding = {"principal": context.principal_id, "agent": context.agent_id, "deployment": base}
        task = asyncio.ensure_future(self._send("PUT", f"/v1/sessions/{context.session_id}", json=binding))
        try:
            resp = await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait([task])
            raise
        resp.raise_for_status()
        await self._enforce(base, context.principal_id)
        resp = await self._write("POST", "/v1/session-credentials", key=str(uuid.uuid4()),
                                 json_body={"principal": context.principal_id, "session": context.session_id})
        resp.raise_for_status()
        cred = resp.json()
        logger.info("session %s: credential %s issued", context.session_id, cred["id"])
        return RuntimeMaterials(
            files=(RuntimeFile(name=CREDENTIAL_FILE, content=self._document(cred, context.principal_id)),),
            environment={"BRIGHTWAVE_CREDENTIALS": context.file_path(CREDENTIAL_FILE)},
        )

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        session = await self._session(context.session_id)
        await self._enforce(self.deployment_url or session["deployment"], context.principal_id)
        url = f"/v1/sessions/{context.session_id}/attempts/{context.dispatch_attempt_id}/credential"
        current = await self._send("GET", url)
        cred = current.json() if current.status_code == 200 else None
        if cred is None or context.refresh or cred["expires_at"] - time.time() < 30:
            key = self._idempotency_key(context, cred)
            resp = await self._write("POST", url, key=key, json_body={"principal": context.principal_id})
            resp.raise_for_status()
            cred = resp.json()
        logger.info("turn %s/%s: credential %s", context.session_id, context.dispatch_attempt_id, cred["id"])
        return RuntimeMaterials(
            files=(RuntimeFile(name=CREDENTIAL_FILE, content=self._document(cred, context.principal_id)),),
            turn_validity_seconds=120.0,
        )

    def _idempotency_key(self, context: TurnPreparationContext, current: Optional[Dict[str, Any]]) -> str:
        """Issue once per attempt; a rotation is keyed by the credential it replaces."""
        base = f"{context.session_id}/{context.dispatch_attempt_id}"
        return f"{base}/rotate/{current['id']}" if current else base

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        session = await self._session(context.session_id)
        return self._state(await self._consent(self.deployment_url or session["deployment"], context.owner_id))

    async def perform_user_action(self, *, context: SessionUserActionContext, action_id: str) -> SessionUserActionState:
        if action_id != RECHECK.id:
            raise ValueError(f"unknown action {action_id!r}")
        session = await self._session(context.session_id)
        base = self.deployment_url or session["deployment"]
        return self._state(await self._consent(base, context.owner_id, check=True))

    def _state(self, answer: Mapping[str, Any]) -> SessionUserActionState:
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        action = {"status": "pending" if answer.get("status") == "pending" else "unknown", "message": NEEDS_CONSENT}
        if answer.get("url"):
            action["url"] = answer["url"]
        return SessionUserActionState(ready=False, user_action=action, actions=(RECHECK,))

    @staticmethod
    def _document(cred: Mapping[str, Any], principal: str) -> bytes:
        return json.dumps({"principal": principal, "credential_id": cred["id"], "secret": cred["secret"],
                           "expires_at": cred["expires_at"]}, sort_keys=True).encode()
