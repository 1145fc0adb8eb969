"""Northwind tools provider.

Northwind's deployment keeps an Agent catalogue (two records per Agent: the Agent and its package list),
issues tools credentials per principal, and asks principals for consent before their Sessions may use the
tools. Requests go through ``http.client`` on one keep-alive connection per worker thread; blocking calls run
in the event loop's executor, and a cancelled callback waits for its request to finish before it gives up.
"""

import asyncio
import http.client
import json
import logging
import os
import select
import threading
import time
import urllib.parse

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)

log = logging.getLogger("northwind.tools")

CHECK = SessionUserActionCommand(id="check-current-consent", label="Check my consent again")
CONSENT_TEXT = "Northwind needs your consent before this Agent can use its tools. Grant it, then send again."
CREDENTIAL_FILE = "northwind-credential.json"
TURN_VALIDITY = 600.0


class Unreachable(Exception):
    """Northwind's services did not answer (no detail: answers may carry credentials)."""


class _Wire:
    """One keep-alive connection per thread to the deployment's base URL."""

    def __init__(self):
        self._local = threading.local()

    def _base(self):
        base = os.environ.get("NORTHWIND_URL") or os.environ.get("ASTRABOX_DOUBLE_URL", "")
        parts = urllib.parse.urlsplit(base)
        return parts.hostname, parts.port or 80, parts.path.rstrip("/")

    def _connection(self, fresh=False):
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None:
            # An idle keep-alive connection the server closed reads as ready (EOF): never send on it.
            readable, _, _ = select.select([conn.sock], [], [], 0)
            fresh = fresh or bool(readable)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            host, port, _ = self._base()
            conn = http.client.HTTPConnection(host, port, timeout=5)
            self._local.conn = conn
        return conn

    def send(self, method, path, body=None, headers=None, timeout=5.0):
        """Send one request; returns (status, decoded body). Only reads are repeated, on a fresh connection."""
        _, _, prefix = self._base()
        payload = None if body is None else json.dumps(body, sort_keys=True).encode()
        hdrs = {"Accept": "application/json", "Connection": "keep-alive"}
        if payload is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        tries = 2 if method == "GET" else 1
        for attempt in range(tries):
            conn = self._connection(fresh=attempt > 0)
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, prefix + path, body=payload, headers=hdrs)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
                if attempt + 1 < tries:
                    continue
                raise Unreachable("%s %s: no answer" % (method, path)) from None
            try:
                return resp.status, json.loads(raw) if raw else None
            except ValueError:
                return resp.status, None
        raise Unreachable("%s %s: no answer" % (method, path))


def _key(*parts):
    return "/v1/records/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


class NorthwindTools(RuntimePreparationProvider):
    name = "northwind-tools"

    def __init__(self):
        self._wire = _Wire()

    async def _http(self, method, path, body=None, headers=None, deadline=None):
        timeout = 5.0 if not deadline else max(0.5, min(5.0, deadline - time.time()))
        loop = asyncio.get_running_loop()
        pending = loop.run_in_executor(None, self._wire.send, method, path, body, headers, timeout)
        interrupted = False
        while True:
            try:
                answer = await asyncio.shield(pending)
                break
            except asyncio.CancelledError:
                interrupted = True  # the request is on the wire: let it finish before giving up
                if pending.done():
                    break
        if interrupted:
            raise asyncio.CancelledError()
        return answer

    # plan -------------------------------------------------------------------------------------------------

    def plan(self, *, config):
        tools = config.get("deployment") or {}
        names = [str((p or {}).get("name", "")) for p in (config.get("packages") or [])]
        return RuntimePreparationPlan(
            session_bound=False,
            declaration={"catalogue": 2, "audience": str(tools.get("audience") or "northwind"), "packages": names},
        )

    # synchronize / recover --------------------------------------------------------------------------------

    async def synchronize(self, *, context):
        op = context.operation
        fence = {"X-Astrabox-Operation": op.operation_id}
        wanted = {
            _key("northwind-agents", op.agent_id): {"agent": op.agent_id, "version": context.config_version},
            _key("northwind-agents", op.agent_id, "packages"): {
                "version": context.config_version,
                "packages": sorted(str(p.source.get("name", "")) for p in context.packages),
            },
        }
        wrote = 0
        for path, value in wanted.items():
            status, current = await self._http("GET", path, deadline=op.deadline)
            version = 0
            if status == 200:
                version = current["version"]
                have = current["value"]
                if have == value or have.get("version", 0) > context.config_version:
                    continue
            elif status != 404:
                raise Unreachable("catalogue read answered %d" % status)
            status, _ = await self._http("PUT", path, {"value": value}, dict(fence, **{"If-Match": str(version)}), op.deadline)
            if status != 200:
                raise Unreachable("catalogue write answered %d" % status)
            wrote += 1
        log.info("catalogue of agent %s: %d record(s) written", op.agent_id, wrote)

    async def recover(self, *, operation):
        try:
            status, body = await self._http(
                "POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": operation.operation_id},
                deadline=operation.deadline,
            )
        except Unreachable:
            return False
        return status == 200 and (body or {}).get("fenced") == operation.operation_id

    # consent ----------------------------------------------------------------------------------------------

    async def _consent(self, principal, check=False):
        path = "/v1/consents/" + urllib.parse.quote(principal, safe="")
        status, body = await self._http("POST", path + "/check") if check else await self._http("GET", path)
        if status != 200 or not isinstance(body, dict):
            raise Unreachable("consent service answered %d" % status)
        return body

    @staticmethod
    def _prerequisite(answer):
        url = answer.get("url") or None
        if url is not None and not str(url).startswith("https://"):
            url = None
        status = "pending" if answer.get("status") == "pending" else "unknown"
        return {"message": CONSENT_TEXT, "status": status, "url": url}

    async def _demand_consent(self, principal):
        answer = await self._consent(principal)
        if answer.get("status") != "granted":
            need = self._prerequisite(answer)
            raise PreparationUserActionRequired(message=need["message"], url=need["url"], status=need["status"])

    def _state(self, answer):
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, user_action=self._prerequisite(answer), actions=(CHECK,))

    async def read_user_actions(self, *, context):
        return self._state(await self._consent(context.owner_id))

    async def perform_user_action(self, *, context, action_id):
        if action_id != CHECK.id:
            raise ValueError("Northwind offers only %s" % CHECK.id)
        return self._state(await self._consent(context.owner_id, check=True))

    # material ---------------------------------------------------------------------------------------------

    async def _credential(self, principal, deadline=None):
        status, body = await self._http(
            "POST", "/v1/credentials", {"principal_id": principal, "audience": "northwind"}, deadline=deadline
        )
        if status not in (200, 201) or not isinstance(body, dict) or not body.get("token"):
            raise Unreachable("credential service answered %d" % status)
        return json.dumps({"principal": principal, "token": body["token"]}, sort_keys=True).encode()

    async def prepare_session(self, *, context):
        await self._demand_consent(context.principal_id)
        credential = await self._credential(context.principal_id)
        log.info("session %s (%s): credential delivered", context.session_id, context.trigger)
        return RuntimeMaterials(
            files=(RuntimeFile(name=CREDENTIAL_FILE, content=credential),),
            environment={"NORTHWIND_CREDENTIAL": context.file_path(CREDENTIAL_FILE)},
        )

    async def prepare_turn(self, *, context):
        await self._demand_consent(context.principal_id)
        path = _key("northwind-turns", context.session_id, context.dispatch_attempt_id)
        status, stored = await self._http("GET", path, deadline=context.deadline)
        version = stored["version"] if status == 200 else 0
        if status == 200 and not context.refresh and stored["value"].get("principal") == context.principal_id:
            return self._turn(stored["value"]["credential"].encode())
        credential = await self._credential(context.principal_id, context.deadline)
        value = {"principal": context.principal_id, "credential": credential.decode()}
        status, _ = await self._http("PUT", path, {"value": value}, {"If-Match": str(version)}, context.deadline)
        if status == 412:  # another replica stored (or renewed) it first: that one is the attempt's material
            status, stored = await self._http("GET", path, deadline=context.deadline)
            if status == 200 and stored["version"] > version:
                return self._turn(stored["value"]["credential"].encode())
        if status != 200:
            raise Unreachable("turn material could not be stored (%d)" % status)
        return self._turn(credential)

    @staticmethod
    def _turn(credential):
        return RuntimeMaterials(files=(RuntimeFile(name=CREDENTIAL_FILE, content=credential),), turn_validity_seconds=TURN_VALIDITY)
