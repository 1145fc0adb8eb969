"""A session_bound=False provider using ``requests`` (blocking, so always run in a worker thread).

prepare_session delivers a credential file for the Session's principal once consent is granted;
prepare_turn enforces the consent prerequisite again and returns nothing to refresh;
read_user_actions reports the prerequisite without offering any operation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, Mapping, Optional
from urllib.parse import quote, urlsplit

import requests

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionPreparationContext,
    SessionUserActionContext,
    SessionUserActionState,
    TurnPreparationContext,
)

log = logging.getLogger(__name__)

MESSAGE = "Approve access to your tools account, then try again."
TIMEOUT = (2.0, 5.0)


class ServiceError(Exception):
    """The deployment answered badly; the text names the request only."""


def _base_url(config: Optional[Mapping[str, Any]]) -> str:
    deployment = config.get("deployment") if config is not None else None
    if isinstance(deployment, Mapping) and isinstance(deployment.get("base_url"), str):
        if deployment["base_url"].startswith(("http://", "https://")):
            return deployment["base_url"].rstrip("/")
    value = os.environ.get("ASTRABOX_DOUBLE_URL", "")
    if not value:
        raise ServiceError("no deployment URL configured")
    return value.rstrip("/")


def _call(method: str, url: str, body: Any = None) -> Any:
    with requests.Session() as session:
        session.trust_env = False  # never route the deployment's traffic through a proxy
        try:
            response = session.request(method, url, json=body, timeout=TIMEOUT)
        except requests.RequestException as exc:
            raise ServiceError("%s %s failed: %s" % (method, urlsplit(url).path, type(exc).__name__)) from None
    if response.status_code not in (200, 201):
        raise ServiceError("%s %s answered %d" % (method, urlsplit(url).path, response.status_code))
    try:
        return response.json()
    except ValueError:
        raise ServiceError("%s %s answered no JSON" % (method, urlsplit(url).path)) from None


async def _request(method: str, url: str, body: Any = None) -> Any:
    """Run one blocking request; on cancellation wait for it before re-raising (no write left in flight)."""
    task = asyncio.ensure_future(asyncio.to_thread(_call, method, url, body))
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
        except Exception:
            break
    if cancelled:
        if not task.cancelled():
            task.exception()
        raise asyncio.CancelledError()
    return task.result()


class RequestsProvider(RuntimePreparationProvider):
    name = "requests-client"

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        deployment = config.get("deployment")
        audience = deployment.get("audience") if isinstance(deployment, Mapping) else None
        return RuntimePreparationPlan(declaration={"client": "requests", "audience": audience or "default"})

    async def _consent(self, base: str, principal_id: str) -> Mapping[str, Any]:
        answer = await _request("GET", "%s/v1/consents/%s" % (base, quote(principal_id, safe="")))
        return answer if isinstance(answer, Mapping) else {}

    def _action(self, answer: Mapping[str, Any]) -> dict:
        action = {"status": "pending" if answer.get("status") == "pending" else "unknown", "message": MESSAGE}
        url = answer.get("url")
        if isinstance(url, str) and urlsplit(url).scheme in ("http", "https") and "@" not in urlsplit(url).netloc:
            action["url"] = url
        return action

    async def _require_consent(self, base: str, principal_id: str) -> None:
        answer = await self._consent(base, principal_id)
        if answer.get("status") != "granted":
            action = self._action(answer)
            raise PreparationUserActionRequired(message=action["message"], url=action.get("url"), status=action["status"])

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        base = _base_url(context.config)
        await self._require_consent(base, context.principal_id)
        deployment = context.config.get("deployment")
        audience = deployment.get("audience") if isinstance(deployment, Mapping) else None
        answer = await _request(
            "POST", base + "/v1/credentials", {"principal_id": context.principal_id, "audience": audience or "default"}
        )
        token = answer.get("token") if isinstance(answer, Mapping) else None
        if not isinstance(token, str):
            raise ServiceError("POST /v1/credentials answered no token")
        content = json.dumps({"access_token": token, "principal": context.principal_id}).encode()
        log.info("session %s: credential delivered", context.session_id)
        return RuntimeMaterials(
            files=(RuntimeFile(name="credential.json", content=content),),
            environment={"TOOLS_CREDENTIAL_FILE": context.file_path("credential.json")},
        )

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        await self._require_consent(_base_url(None), context.principal_id)
        return RuntimeMaterials()

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        answer = await self._consent(_base_url(None), context.owner_id)
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, user_action=self._action(answer))
