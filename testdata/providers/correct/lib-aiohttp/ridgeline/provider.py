"""Ridgeline provider (aiohttp).

aiohttp sessions belong to the event loop they were created on, so we keep one ``ClientSession`` per running
loop (``_http()``). Turn tokens come from Ridgeline's token service; each dispatch attempt's token is stored
create-only under ``/v2/attempts/<session>/<attempt>`` and read back by retries. Consent is Ridgeline's
entitlement state, asked on every turn. Writes are shielded and awaited even when we are cancelled.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from typing import Any, Dict, Optional, Tuple

import aiohttp

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)

log = logging.getLogger("ridgeline")

BASE = "https://entitlements.ridgeline.example"
TOKEN_FILE = "ridgeline.json"
ENROLL = "Finish enrolling in Ridgeline to let this Agent act for you."
REFRESH = SessionUserActionCommand(id="refresh-entitlement", label="I've enrolled")
TIMEOUT = aiohttp.ClientTimeout(total=5)


class RidgelineError(Exception):
    pass


class RidgelineProvider(RuntimePreparationProvider):
    name = "ridgeline"

    def __init__(self) -> None:
        self._sessions: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession]" = weakref.WeakKeyDictionary()

    def _http(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            session = aiohttp.ClientSession(BASE, timeout=TIMEOUT, trust_env=True,
                                            headers={"User-Agent": "ridgeline-provider/2"})
            self._sessions[loop] = session
        return session

    async def _call(self, method: str, path: str, **kw: Any) -> Tuple[int, Any, Optional[str]]:
        async with self._http().request(method, path, **kw) as resp:
            body = await resp.json(content_type=None) if resp.content_length != 0 else None
            return resp.status, body, resp.headers.get("ETag")

    async def _write(self, method: str, path: str, **kw: Any) -> Tuple[int, Any, Optional[str]]:
        job = asyncio.ensure_future(self._call(method, path, **kw))
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise

    # ----------------------------------------------------------------------------------------- entitlement

    async def _entitlement(self, principal: str, refresh: bool = False) -> Dict[str, Any]:
        if refresh:
            status, body, _ = await self._call("POST", f"/v2/entitlements/{principal}:refresh")
        else:
            status, body, _ = await self._call("GET", f"/v2/entitlements/{principal}")
        if status != 200:
            raise RidgelineError(f"entitlements answered {status}")
        return body

    async def _require_entitlement(self, principal: str) -> None:
        ent = await self._entitlement(principal)
        if ent["state"] != "active":
            raise PreparationUserActionRequired(message=ENROLL, url=ent.get("enroll_url"), status="pending")

    def _state(self, ent: Dict[str, Any]) -> SessionUserActionState:
        if ent["state"] == "active":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, actions=(REFRESH,),
                                      user_action={"status": "pending", "message": ENROLL, "url": ent["enroll_url"]})

    # --------------------------------------------------------------------------------------------- tokens

    async def _mint(self, principal: str, session_id: str, attempt: str = "") -> Dict[str, Any]:
        status, body, _ = await self._write("POST", "/v2/tokens", json={"subject": principal, "session": session_id, "attempt": attempt})
        if status != 201:
            raise RidgelineError(f"token service answered {status}")
        return {"subject": principal, "token": body["token"], "expires_at": round(time.time() + body["ttl"], 3)}

    # ------------------------------------------------------------------------------------------ callbacks

    def plan(self, *, config):
        return RuntimePreparationPlan(session_bound=True, declaration={"ridgeline": BASE})

    async def prepare_session(self, *, context):
        await self._require_entitlement(context.principal_id)
        doc = await self._mint(context.principal_id, context.session_id)
        return RuntimeMaterials(files=(RuntimeFile(name=TOKEN_FILE, content=json.dumps(doc).encode()),),
                                environment={"RIDGELINE_TOKEN_FILE": context.file_path(TOKEN_FILE)})

    async def prepare_turn(self, *, context):
        await self._require_entitlement(context.principal_id)
        path = f"/v2/attempts/{context.session_id}/{context.dispatch_attempt_id}"
        status, stored, etag = await self._call("GET", path)
        doc = stored if status == 200 else None
        if doc is None or context.refresh or doc["expires_at"] - time.time() < 60:
            fresh = await self._mint(context.principal_id, context.session_id, context.dispatch_attempt_id)
            headers = {"If-Match": etag} if doc is not None else {"If-None-Match": "*"}
            status, _, _ = await self._write("PUT", path, json=fresh, headers=headers)
            if status == 201:
                doc = fresh
            elif status == 412:
                status, doc, _ = await self._call("GET", path)
            else:
                raise RidgelineError(f"attempt store answered {status}")
        log.info("turn %s/%s: token ready", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(RuntimeFile(name=TOKEN_FILE, content=json.dumps(doc).encode()),),
                                turn_validity_seconds=240.0)

    async def read_user_actions(self, *, context):
        return self._state(await self._entitlement(context.owner_id))

    async def perform_user_action(self, *, context, action_id):
        if action_id != REFRESH.id:
            raise ValueError("unknown action")
        return self._state(await self._entitlement(context.owner_id, refresh=True))
