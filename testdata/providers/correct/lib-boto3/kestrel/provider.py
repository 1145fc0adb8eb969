"""Kestrel provider: boto3 against DynamoDB and Secrets Manager (eu-west-1).

* Table ``kestrel-runtime``: ``session#<id>`` (principal, consent endpoint), ``attempt#<session>#<attempt>``
  (the attempt's turn material, put once with ``attribute_not_exists(pk)``), ``agent#<agent>`` (inventory,
  versioned, rewritten only when it changed, conditional on the version read).
* Secrets Manager ``kestrel/tool-api`` holds the tool API key that Sessions receive.

Credentials come from the default chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` in the
environment, or the instance role). boto3 is blocking: calls run in worker threads, awaited to the end even
when the callback is cancelled.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
import urllib.request
from typing import Any, Dict, Optional

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from astrabox.seams import (
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionUserActionCommand,
    SessionUserActionState,
)

logger = logging.getLogger("kestrel")

REGION = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "eu-west-1"
TABLE = "kestrel-runtime"
SECRET_ID = "kestrel/tool-api"
FILE = "kestrel.json"
RECHECK = SessionUserActionCommand(id="recheck", label="Check again")
MESSAGE = "Approve Kestrel for this Agent, then resend your message."


async def off_loop(fn, *args, **kwargs):
    job = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await asyncio.wait([job])
        raise


def _s(value: Any) -> Dict[str, str]:
    return {"S": json.dumps(value, sort_keys=True)}


class KestrelProvider(RuntimePreparationProvider):
    name = "kestrel"

    def __init__(self) -> None:
        session = boto3.session.Session(region_name=REGION)
        cfg = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=5)
        self.ddb = session.client("dynamodb", config=cfg)
        self.sm = session.client("secretsmanager", config=cfg)
        self.consent_base: Optional[str] = None

    # ------------------------------------------------------------------------------------------ storage

    def _get(self, pk: str) -> Optional[Dict[str, Any]]:
        item = self.ddb.get_item(TableName=TABLE, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
        return json.loads(item["doc"]["S"]) if item else None

    def _put_new(self, pk: str, doc: Dict[str, Any]) -> bool:
        try:
            self.ddb.put_item(TableName=TABLE, Item={"pk": {"S": pk}, "doc": _s(doc), "version": {"N": "1"}},
                              ConditionExpression="attribute_not_exists(pk)")
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise

    def _get_versioned(self, pk: str):
        item = self.ddb.get_item(TableName=TABLE, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
        return (json.loads(item["doc"]["S"]), item["version"]["N"]) if item else (None, None)

    def _replace(self, pk: str, doc: Dict[str, Any], version: str) -> bool:
        try:
            self.ddb.put_item(TableName=TABLE, Item={"pk": {"S": pk}, "doc": _s(doc), "version": {"N": str(int(version) + 1)}},
                              ConditionExpression="#v = :v", ExpressionAttributeNames={"#v": "version"},
                              ExpressionAttributeValues={":v": {"N": version}})
            return True
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise

    def _tool_key(self) -> str:
        return json.loads(self.sm.get_secret_value(SecretId=SECRET_ID)["SecretString"])["api_key"]

    # ------------------------------------------------------------------------------------------ consent

    @staticmethod
    def _consent(base: str, principal: str, check: bool = False) -> Dict[str, Any]:
        req = urllib.request.Request(f"{base}/v1/consents/{principal}" + ("/check" if check else ""),
                                     method="POST" if check else "GET")
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.load(resp)

    async def _base(self, session_id: str) -> str:
        if self.consent_base:
            return self.consent_base
        record = await off_loop(self._get, f"session#{session_id}")
        if not record:
            raise RuntimeError("no Kestrel record for this Session")
        return record["consent_base"]

    async def _require(self, base: str, principal: str) -> None:
        answer = await off_loop(self._consent, base, principal)
        if answer.get("status") != "granted":
            raise PreparationUserActionRequired(message=MESSAGE, url=answer.get("url") or None,
                                                status="pending" if answer.get("status") == "pending" else "unknown")

    # ---------------------------------------------------------------------------------------- callbacks

    def plan(self, *, config):
        base = ((config or {}).get("deployment") or {}).get("base_url")
        if base:
            self.consent_base = base.rstrip("/")
        return RuntimePreparationPlan(session_bound=True, declaration={"table": TABLE, "region": REGION})

    async def synchronize(self, *, context):
        self.plan(config=context.config)
        pk = self._agent_key(context)
        spec = {"agent": context.operation.agent_id, "config_version": context.config_version,
                "packages": sorted(str(p.source.get("name", "")) for p in context.packages)}
        for _ in range(3):
            current, version = await off_loop(self._get_versioned, pk)
            if current == spec or (current and current["config_version"] > spec["config_version"]):
                return
            ok = await (off_loop(self._put_new, pk, spec) if version is None else off_loop(self._replace, pk, spec, version))
            if ok:
                logger.info("agent %s: inventory stored", context.operation.agent_id)
                return
        raise RuntimeError("agent item kept changing")

    def _agent_key(self, context) -> str:
        return f"agent#{context.operation.agent_id}"

    async def prepare_session(self, *, context):
        self.plan(config=context.config)
        if not self.consent_base:
            raise RuntimeError("deployment.base_url is not configured")
        pk = f"session#{context.session_id}"
        record = {"principal": context.principal_id, "consent_base": self.consent_base}
        if await off_loop(self._get, pk) != record:
            await off_loop(self._put_new, pk, record)
        await self._require(self.consent_base, context.principal_id)
        key = await off_loop(self._tool_key)
        doc = {"principal": context.principal_id, "api_key": key}
        logger.info("session %s prepared", context.session_id)
        return RuntimeMaterials(files=(RuntimeFile(name=FILE, content=json.dumps(doc).encode()),),
                                environment={"KESTREL_CONFIG": context.file_path(FILE)})

    async def prepare_turn(self, *, context):
        await self._require(await self._base(context.session_id), context.principal_id)
        pk = f"attempt#{context.session_id}#{context.dispatch_attempt_id}"
        current, version = await off_loop(self._get_versioned, pk)
        if current is None or context.refresh or current["expires_at"] - time.time() < 30:
            fresh = {"principal": context.principal_id, "turn_token": "kt_" + secrets.token_urlsafe(24),
                     "expires_at": round(time.time() + 600, 3)}
            ok = await (off_loop(self._put_new, pk, fresh) if version is None else off_loop(self._replace, pk, fresh, version))
            current = fresh if ok else (await off_loop(self._get_versioned, pk))[0]
        logger.info("turn %s/%s ready", context.session_id, context.dispatch_attempt_id)
        return RuntimeMaterials(files=(RuntimeFile(name=FILE, content=json.dumps(current, sort_keys=True).encode()),),
                                turn_validity_seconds=240.0)

    async def read_user_actions(self, *, context):
        return self._state(await off_loop(self._consent, await self._base(context.session_id), context.owner_id))

    async def perform_user_action(self, *, context, action_id):
        if action_id != RECHECK.id:
            raise ValueError("unknown action")
        return self._state(await off_loop(self._consent, await self._base(context.session_id), context.owner_id, True))

    @staticmethod
    def _state(answer):
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        action = {"status": "pending" if answer.get("status") == "pending" else "unknown", "message": MESSAGE}
        if answer.get("url"):
            action["url"] = answer["url"]
        return SessionUserActionState(ready=False, user_action=action, actions=(RECHECK,))
