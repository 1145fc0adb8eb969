"""Larkspur's runtime preparation provider.

The reference provider's decisions (consent, Sessions, recovery) with two of Larkspur's own systems:

- turn tokens come from Larkspur's token API (``requests``). Every token request carries an
  ``Idempotency-Key``; the API answers a key it has seen with the token it issued for it. The attempt's record
  at the deployment holds only the key (never the token), so a retry on any replica asks again with the
  same key and gets the same token, and a refresh uses the next key.
- the Agent record is a secret in AWS Secrets Manager (``boto3``), read, compared and written only when it
  changed, named by the Agent ID alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from typing import Any, Dict, Mapping, Tuple

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from reference_provider.deployment import DeploymentClient, DeploymentError, settled
from reference_provider.provider import ReferenceProvider

from astrabox.seams import AgentPreparationOperation, TurnPreparationContext

TOKENS_URL = "https://tokens.larkspur.example"
SECRETS_REGION = "eu-west-1"
# Secrets Manager through the VPC's interface endpoint, behind Larkspur's egress gateway.
SECRETS_ENDPOINT = "http://secretsmanager.eu-west-1.vpce.larkspur.internal"

_local = threading.local()


def _session() -> requests.Session:
    """One requests session per worker thread, retrying connection failures (the key makes a POST safe)."""
    session = getattr(_local, "session", None)
    if session is None:
        session = requests.Session()
        retry = Retry(total=2, connect=2, read=2, status=0, allowed_methods=None, backoff_factor=0)
        session.mount("https://", HTTPAdapter(max_retries=retry))
        _local.session = session
    return session


class LarkspurProvider(ReferenceProvider):
    name = "larkspur"

    # ------------------------------------------------------------------------------------ turn tokens

    def _idempotency_key(self, context: TurnPreparationContext, version: int) -> str:
        """The key of the token for this attempt's record at ``version``: the same on every retry."""
        return "turn-%s-%s-v%d" % (context.session_id, context.dispatch_attempt_id, version)

    def _mint(self, principal_id: str, key: str, deadline: float, metadata: Mapping[str, Any]) -> Dict[str, Any]:
        timeout = min(10.0, max(0.2, deadline - time.time()))
        answer = _session().post(
            TOKENS_URL + "/v1/tokens",
            json={"principal_id": principal_id, "audience": self._audience(), "metadata": dict(metadata)},
            headers={"Idempotency-Key": key},
            timeout=timeout,
        )
        if answer.status_code not in (200, 201):
            raise DeploymentError("POST /v1/tokens answered %d" % answer.status_code)
        body = answer.json()
        return {
            "type": "larkspur-token",
            "principal_id": principal_id,
            "audience": self._audience(),
            "token": body["token"],
            "expires_at": body["expires_at"],
        }

    async def _token(self, context: TurnPreparationContext, key: str, refresh: bool) -> Dict[str, Any]:
        metadata = {"session": context.session_id, "attempt": context.dispatch_attempt_id, "refresh": refresh}
        return await settled(self._mint, context.principal_id, key, context.deadline or time.time() + 10, metadata)

    async def _material(self, client: DeploymentClient, path: str, context: TurnPreparationContext, refresh: bool) -> Tuple[Dict[str, Any], str]:
        for _ in range(self.CAS_ATTEMPTS):
            version, stored = await self._load_attempt(client, path)
            stored_key = stored.get("key") if isinstance(stored, Mapping) else None
            if stored_key and not refresh:
                document = await self._token(context, stored_key, False)
                return {"session_id": context.session_id, "document": document}, "asked again with the attempt's key"
            key = self._idempotency_key(context, version)
            document = await self._token(context, key, refresh)
            if await self._store_attempt(client, path, {"session_id": context.session_id, "key": key}, version):
                return {"session_id": context.session_id, "document": document}, "issued with a new key"
            refresh = False  # somebody stored first: take their key
        raise DeploymentError("the attempt's record kept changing")

    async def _attempt_material(self, client, path, context):
        return await self._material(client, path, context, False)

    async def _renew_attempt(self, client, path, context):
        return await self._material(client, path, context, True)

    # ------------------------------------------------------------------------------------ Agent records

    def _secrets(self, operation_id: str):
        client = boto3.session.Session().client(
            "secretsmanager",
            region_name=SECRETS_REGION,
            endpoint_url=SECRETS_ENDPOINT,
            aws_access_key_id=os.environ.get("LARKSPUR_AWS_ACCESS_KEY_ID", "AKIALARKSPURPROVIDER"),
            aws_secret_access_key=os.environ.get("LARKSPUR_AWS_SECRET_ACCESS_KEY", "larkspur-fixture-not-a-secret"),
            config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5, read_timeout=10),
        )

        def trace(request, **_):
            request.headers["X-Larkspur-Operation"] = operation_id

        client.meta.events.register("before-sign.secretsmanager.*", trace)
        return client

    def _secret_name(self, key: Tuple[str, ...]) -> str:
        return "larkspur/" + "/".join(key)

    def _sync_blocking(self, name: str, spec: Dict[str, Any], operation_id: str) -> str:
        sm = self._secrets(operation_id)
        value = json.dumps({"spec": spec, "written_by": operation_id}, sort_keys=True)
        try:
            current = json.loads(sm.get_secret_value(SecretId=name)["SecretString"]).get("spec")
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ResourceNotFoundException":
                raise
            sm.create_secret(Name=name, SecretString=value)
            return "created"
        if current == spec:
            return "unchanged"
        if isinstance(current, Mapping) and current.get("config_version", 0) > spec["config_version"]:
            return "kept (a newer Agent version wrote it)"
        sm.put_secret_value(SecretId=name, SecretString=value)
        return "written"

    async def _write_if_changed(self, client, key, spec, operation: AgentPreparationOperation) -> str:
        return await settled(self._sync_blocking, self._secret_name(key), spec, operation.operation_id)
