"""Quillfeather provider: OAuth2 client credentials (authlib) + RFC 8693 token exchange (requests).

The replica holds one service token (client-credentials grant through authlib's ``OAuth2Session``), cached
until a minute before it expires. Each Session and each dispatch attempt gets a user token minted by token
exchange. An attempt's grant is stored at ``/v1/grants/<session>/<attempt>`` (create-only), so a retry on any
replica answers the same. Consent is Quillfeather's own (``/v1/users/<principal>/consent``).

requests is blocking; ``blocking`` runs each call in a worker thread and, if the callback is cancelled,
waits for that thread before letting the cancellation through.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import threading
import time
from typing import Any, Dict, Optional

import requests
from authlib.integrations.requests_client import OAuth2Session

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

LOG = logging.getLogger("quillfeather")

ISSUER = "https://login.quillfeather.example"
TOKEN_URL = ISSUER + "/oauth2/token"
CLIENT_ID = "agent-runtime"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
FILE = "quillfeather-token.json"
RECHECK = SessionUserActionCommand(id="recheck-consent", label="I've granted access")
PROMPT = "Grant the Agent access in Quillfeather, then retry."


def blocking(fn):
    """Decorator: run a blocking method in a thread; a cancellation waits for it to finish."""

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        job = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        try:
            return await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise

    return wrapper


class TokenCache:
    """The replica's service token, fetched with authlib and reused until shortly before it expires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._token: Optional[Dict[str, Any]] = None
        self.oauth = OAuth2Session(CLIENT_ID, os.environ.get("QUILLFEATHER_CLIENT_SECRET", ""),
                                   token_endpoint_auth_method="client_secret_basic", scope="grants:write")

    def get(self) -> str:
        with self._lock:
            if self._token is None or self._token["expires_at"] - time.time() < 60:
                self._token = self.oauth.fetch_token(TOKEN_URL, grant_type="client_credentials", timeout=5)
            return self._token["access_token"]


class QuillfeatherProvider(RuntimePreparationProvider):
    name = "quillfeather"

    def __init__(self) -> None:
        self.tokens = TokenCache()
        self.http = requests.Session()

    # ----- blocking calls ------------------------------------------------------------------------------

    def _auth(self) -> Dict[str, str]:
        return {"Authorization": "Bearer " + self.tokens.get()}

    @blocking
    def exchange(self, principal: str) -> Dict[str, Any]:
        """Mint a user token for ``principal`` (RFC 8693 token exchange, plain requests)."""
        resp = self.http.post(TOKEN_URL, timeout=5, data={
            "grant_type": EXCHANGE, "subject_token": self.tokens.get(),
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "requested_subject": principal, "audience": "quillfeather-tools"})
        resp.raise_for_status()
        grant = resp.json()
        return {"principal": principal, "access_token": grant["access_token"],
                "expires_at": round(time.time() + grant["expires_in"], 3)}

    @blocking
    def consent(self, principal: str, recheck: bool = False) -> Dict[str, Any]:
        url = f"{ISSUER}/v1/users/{principal}/consent" + ("/check" if recheck else "")
        resp = self.http.request("POST" if recheck else "GET", url, headers=self._auth(), timeout=5)
        resp.raise_for_status()
        return resp.json()

    @blocking
    def load_grant(self, session_id: str, attempt: str) -> Optional[Dict[str, Any]]:
        resp = self.http.get(f"{ISSUER}/v1/grants/{session_id}/{attempt}", headers=self._auth(), timeout=5)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return resp.json()

    @blocking
    def store_grant(self, session_id: str, attempt: str, grant: Dict[str, Any], create_only: bool) -> bool:
        headers = self._auth()
        if create_only:
            headers["If-None-Match"] = "*"
        resp = self.http.put(f"{ISSUER}/v1/grants/{session_id}/{attempt}", json=grant, headers=headers, timeout=5)
        if resp.status_code == 412:
            return False
        resp.raise_for_status()
        return True

    # ----- callbacks -----------------------------------------------------------------------------------

    def plan(self, *, config):
        return RuntimePreparationPlan(session_bound=True, declaration={"issuer": ISSUER, "client": CLIENT_ID})

    async def _require_consent(self, principal: str) -> None:
        answer = await self.consent(principal)
        if answer["status"] != "granted":
            raise PreparationUserActionRequired(message=PROMPT, url=answer.get("url"), status="pending")

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        await self._require_consent(context.principal_id)
        grant = await self.exchange(context.principal_id)
        LOG.info("session %s: user token for %s", context.session_id, context.principal_id)
        return RuntimeMaterials(files=(RuntimeFile(name=FILE, content=json.dumps(grant).encode()),),
                                environment={"QUILLFEATHER_TOKEN_FILE": context.file_path(FILE)})

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        await self._require_consent(context.principal_id)
        grant = await self.load_grant(context.session_id, context.dispatch_attempt_id)
        if grant is None or context.refresh or grant["expires_at"] - time.time() < 60:
            fresh = await self.exchange(context.principal_id)
            if await self.store_grant(context.session_id, context.dispatch_attempt_id, fresh, create_only=grant is None):
                grant = fresh
            else:
                grant = await self.load_grant(context.session_id, context.dispatch_attempt_id)
        LOG.info("turn %s/%s ready", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(RuntimeFile(name=FILE, content=json.dumps(grant).encode()),),
                                turn_validity_seconds=300.0)

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        return self._state(await self.consent(context.owner_id))

    async def perform_user_action(self, *, context: SessionUserActionContext, action_id: str) -> SessionUserActionState:
        if action_id != RECHECK.id:
            raise ValueError("unknown action")
        return self._state(await self.consent(context.owner_id, True))

    @staticmethod
    def _state(answer: Dict[str, Any]) -> SessionUserActionState:
        if answer["status"] == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, actions=(RECHECK,),
                                      user_action={"status": "pending", "message": PROMPT, "url": answer["url"]})
