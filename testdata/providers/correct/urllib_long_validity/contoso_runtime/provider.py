"""Contoso's provider: one Agent record, an hour-long token per principal, consent with two operations."""

import logging
from urllib.parse import quote

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)

from .http import ServiceError, call

logger = logging.getLogger(__name__)

TOKEN_NAME = "contoso.token"
VALIDITY_S = 3600.0
RECHECK = SessionUserActionCommand(id="recheck", label="I granted consent: check again")
RELOAD = SessionUserActionCommand(id="reload", label="Reload the consent status")
ASK = "Contoso tools need your consent for this Agent. Approve it, then resend your message."


def record(*parts):
    return "/v1/records/contoso/" + "/".join(quote(p, safe="") for p in parts)


class ContosoRuntime(RuntimePreparationProvider):
    name = "contoso-runtime"

    def plan(self, *, config):
        skills = sorted(s for s in (config.get("skills") or []) if isinstance(s, str))
        return RuntimePreparationPlan(session_bound=True, declaration={"schema": "contoso/1", "skills": skills})

    async def synchronize(self, *, context):
        op = context.operation
        path = self._agent_record(context)
        wanted = {"agent": op.agent_id, "version": context.config_version, "skills": bool(context.skills_path)}
        status, got = await call("GET", path, deadline=op.deadline)
        if status == 200 and (got["value"] == wanted or got["value"].get("version", 0) > context.config_version):
            return
        if status not in (200, 404):
            raise ServiceError("agent record read: %d" % status)
        version = got["version"] if status == 200 else 0
        status, _ = await call("PUT", path, {"value": wanted}, deadline=op.deadline, if_match=version, operation=op.operation_id)
        if status != 200:
            raise ServiceError("agent record write: %d" % status)
        logger.info("agent %s record at version %s", op.agent_id, context.config_version)

    def _agent_record(self, context):
        return record("agents", context.operation.agent_id)

    async def recover(self, *, operation):
        try:
            status, body = await call("POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": operation.operation_id}, deadline=operation.deadline)
        except ServiceError:
            return False
        return status == 200 and isinstance(body, dict) and body.get("fenced") == operation.operation_id

    async def _consent(self, who, recheck=False):
        path = "/v1/consents/" + quote(who, safe="")
        status, body = await (call("POST", path + "/check") if recheck else call("GET", path))
        if status != 200 or not isinstance(body, dict):
            raise ServiceError("consent: %d" % status)
        return body

    @staticmethod
    def _action(body):
        status = "pending" if body.get("status") == "pending" else "unknown"
        url = body.get("url")
        return {"message": ASK, "status": status, "url": url if isinstance(url, str) and url.startswith("https://") else None}

    async def _require(self, who):
        body = await self._consent(who)
        if body.get("status") != "granted":
            a = self._action(body)
            raise PreparationUserActionRequired(message=a["message"], url=a["url"], status=a["status"])

    def _view(self, body):
        if body.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, user_action=self._action(body), actions=(RECHECK, RELOAD))

    async def read_user_actions(self, *, context):
        return self._view(await self._consent(context.owner_id))

    async def perform_user_action(self, *, context, action_id):
        if action_id not in (RECHECK.id, RELOAD.id):
            raise ValueError("unknown operation")
        return self._view(await self._consent(context.owner_id, recheck=action_id == RECHECK.id))

    async def _token(self, who, deadline=None):
        status, body = await call("POST", "/v1/credentials", {"principal_id": who, "audience": "contoso"}, deadline=deadline)
        if status not in (200, 201) or not isinstance(body, dict) or not isinstance(body.get("token"), str):
            raise ServiceError("credentials: %d" % status)
        return ("contoso-token %s %s\n" % (who, body["token"])).encode()

    async def prepare_session(self, *, context):
        await self._require(context.principal_id)
        token = await self._token(context.principal_id)
        return RuntimeMaterials(files=(RuntimeFile(TOKEN_NAME, token),), environment={"CONTOSO_TOKEN_FILE": context.file_path(TOKEN_NAME)})

    async def _stored(self, path, deadline):
        status, got = await call("GET", path, deadline=deadline)
        if status == 404:
            return 0, None
        if status != 200:
            raise ServiceError("turn record read: %d" % status)
        return got["version"], got["value"]

    async def prepare_turn(self, *, context):
        await self._require(context.principal_id)
        path = record("turns", context.session_id, context.dispatch_attempt_id)
        version, stored = await self._stored(path, context.deadline)
        if stored is not None and not context.refresh:
            return self._materials(stored["token"].encode())
        token = await self._renewed(context, stored)
        return self._materials(await self._publish(context, path, token, version))

    async def _publish(self, context, path, token, version):
        """Store the attempt's token with compare-and-set and return the token the attempt keeps: another
        replica's, when it stored first. A lost answer fails the call; the platform's retry reads the record."""
        status, _ = await call("PUT", path, {"value": {"token": token.decode()}}, deadline=context.deadline, if_match=version)
        if status == 412:
            newer, stored = await self._stored(path, context.deadline)
            if stored is not None and newer > version:
                return stored["token"].encode()
        if status != 200:
            raise ServiceError("turn record write: %d" % status)
        return token

    async def _renewed(self, context, stored):
        """The attempt's new token: a fresh one (the refresh's whole point)."""
        return await self._token(context.principal_id, context.deadline)

    @staticmethod
    def _materials(token):
        return RuntimeMaterials(files=(RuntimeFile(TOKEN_NAME, token),), turn_validity_seconds=VALIDITY_S)
