"""CatalogProvider: session_bound=False, a skills catalog record per Agent, a settings file per Session.

- plan: not session-bound; declares the catalog format and the sorted skill names.
- synchronize: lists the prepared Skills directory and keeps ``/v1/records/catalog/{agent_id}`` equal to it,
  writing only on a difference, with compare-and-set and the operation header on every write.
- recover: fences exactly the operation and reports the deployment's confirmation.
- prepare_session: a settings file (no credential) named by ``CATALOG_SETTINGS``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import urllib.error
import urllib.request
from typing import Any, Mapping, Optional, Tuple
from urllib.parse import quote

from astrabox.seams import (
    AgentPreparationContext,
    AgentPreparationOperation,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SessionPreparationContext,
)

logger = logging.getLogger("src_layout_provider")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class CatalogError(Exception):
    """An unexpected answer from the deployment (method, path and status only)."""


def _base_url(config: Optional[Mapping[str, Any]]) -> str:
    deployment = config.get("deployment") if config is not None else None
    if isinstance(deployment, Mapping) and isinstance(deployment.get("base_url"), str):
        return deployment["base_url"].rstrip("/")
    url = os.environ.get("ASTRABOX_DOUBLE_URL", "")
    if not url:
        raise CatalogError("no deployment URL configured")
    return url.rstrip("/")


def _blocking(base: str, method: str, path: str, body: Any, headers: Mapping[str, str]) -> Tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=dict(headers))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=4.0) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
        exc.close()
    except OSError as exc:
        raise CatalogError("%s %s failed: %s" % (method, path, type(exc).__name__)) from None
    try:
        return status, (json.loads(raw) if raw else None)
    except ValueError:
        return status, None


async def _send(base: str, method: str, path: str, body: Any = None, headers: Optional[Mapping[str, str]] = None):
    """One request in a worker thread; a cancelled caller waits for it before the cancellation propagates."""
    work = asyncio.ensure_future(asyncio.to_thread(_blocking, base, method, path, body, headers or {}))
    interrupted = False
    while not work.done():
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            interrupted = True
        except Exception:
            break
    if interrupted:
        if not work.cancelled():
            work.exception()
        raise asyncio.CancelledError()
    return work.result()


class CatalogProvider(RuntimePreparationProvider):
    name = "catalog"

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        skills = config.get("skills") or ()
        return RuntimePreparationPlan(
            session_bound=False,
            declaration={"catalog": 2, "skills": sorted(s for s in skills if isinstance(s, str))},
        )

    async def synchronize(self, *, context: AgentPreparationContext) -> None:
        operation = context.operation
        base = _base_url(context.config)
        skills = []
        if context.skills_path:
            try:
                skills = sorted(await context.sandbox.list_dir(context.skills_path))
            except FileNotFoundError:
                skills = []
        wanted = {"skills": skills, "version": context.config_version}
        path = "/v1/records/catalog/" + quote(operation.agent_id, safe="")
        for _ in range(3):
            status, body = await _send(base, "GET", path)
            if status == 404:
                version, current = 0, None
            elif status == 200 and isinstance(body, dict):
                version, current = int(body.get("version", 0)), body.get("value")
            else:
                raise CatalogError("GET %s answered %d" % (path, status))
            if current == wanted:
                logger.info("catalog for agent %s is current", operation.agent_id)
                return
            if isinstance(current, dict) and isinstance(current.get("version"), int) and current["version"] > wanted["version"]:
                logger.info("catalog for agent %s belongs to a newer version", operation.agent_id)
                return
            status, _ = await _send(
                base, "PUT", path, {"value": wanted},
                {"If-Match": str(version), "X-Astrabox-Operation": operation.operation_id},
            )
            if status == 200:
                logger.info("catalog for agent %s updated (%d skills)", operation.agent_id, len(skills))
                return
            if status != 412:
                raise CatalogError("PUT %s answered %d" % (path, status))
        raise CatalogError("PUT %s kept conflicting" % path)

    async def recover(self, *, operation: AgentPreparationOperation) -> bool:
        try:
            status, body = await _send(
                _base_url(None), "POST", "/v1/fences",
                {"agent_id": operation.agent_id, "operation_id": operation.operation_id},
            )
        except CatalogError:
            return False
        return status == 200 and isinstance(body, dict) and body.get("fenced") == operation.operation_id

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        settings = json.dumps({"catalog": "v2", "session": context.session_id}).encode()
        return RuntimeMaterials(
            files=(RuntimeFile(name="catalog-settings.json", content=settings),),
            environment={"CATALOG_SETTINGS": context.file_path("catalog-settings.json")},
        )
