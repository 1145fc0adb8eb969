"""The reference runtime preparation provider.

It shows one correct way to keep every provider clause of the astrabox runtime preparation contract. Each
callback names, in its docstring, the clause IDs it keeps (see ``spec/clauses.md`` and the project README).

The deployment it talks to has four systems, all reached through :mod:`reference_provider.deployment`:

- a record store with compare-and-set (``/v1/records/...``, ``If-Match``), used for the Agent's external
  record (keyed by Agent ID) and for per-attempt turn material shared by every replica;
- fences (``/v1/fences``), used by ``recover``;
- a credential service (``/v1/credentials``) that issues a fresh token per request;
- a consent service (``/v1/consents/...``) that says whether a principal granted consent.

Small hooks (methods starting with ``_``) keep each decision in one place, so that a variant that changes
one decision overrides one method.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

from astrabox.seams import (
    AgentPreparationContext,
    AgentPreparationOperation,
    PreparationUserActionRequired,
    RuntimeFile,
    RuntimeMaterials,
    RuntimePreparationPlan,
    RuntimePreparationProvider,
    SandboxHandle,
    SessionPreparationContext,
    SessionUserActionCommand,
    SessionUserActionContext,
    SessionUserActionState,
    TurnPreparationContext,
    validate_user_action,
)

from .deployment import DeploymentClient, DeploymentError, deployment_url, record_path

__all__ = ["ReferenceProvider"]

logger = logging.getLogger("reference_provider")

#: The audience credentials are issued for when the configuration names none (and always for turns,
#: whose context carries no configuration). ``REFERENCE_AUDIENCE`` in the environment overrides it.
DEFAULT_AUDIENCE = "astrabox-tools"

#: The message of the consent prerequisite: fixed text, never built from configuration or answers.
CONSENT_MESSAGE = "Grant the tools consent for this Agent, then send your message again."

#: The one user action this provider offers.
CHECK_CONSENT = SessionUserActionCommand(id="check-consent", label="Check consent")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: Any) -> Tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else ()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def _document_bytes(document: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a token document: the same document always gives the same bytes."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


class ReferenceProvider(RuntimePreparationProvider):
    """A session-bound provider that delivers a per-principal token file and keeps an Agent record."""

    name = "reference"

    #: The file every Session and turn receives, and the variable that names its path.
    TOKEN_FILE = "token.json"
    TOKEN_ENV = "REFERENCE_TOKEN_FILE"
    #: How long turn material stays valid at most before the host must refresh it.
    TURN_VALIDITY_SECONDS = 300.0
    #: Stored turn material with less time left than this is not reused.
    MIN_REMAINING_SECONDS = 5.0
    #: Compare-and-set retries before giving up.
    CAS_ATTEMPTS = 3

    # -----------------------------------------------------------------------------------------------------
    # plan

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        """Declare that Sessions are needed before the engine initializes.

        Keeps PLAN-SYNC (a plain method), PLAN-NO-IO (reads only ``config``), PLAN-STABLE (the declaration
        depends on nothing but the configuration, in a fixed order) and LEAK-PLAN (no secret field is read).
        """
        return RuntimePreparationPlan(session_bound=True, declaration=self._declaration(config))

    def _declaration(self, config: Mapping[str, Any]) -> Dict[str, Any]:
        deployment = _mapping(config.get("deployment"))
        packages = []
        for item in _sequence(config.get("packages")):
            item = _mapping(item)
            # The source URL stays out: URLs can carry credentials, and name plus ref identify the recipe.
            packages.append({"name": _text(item.get("name")), "ref": _text(item.get("ref"))})
        skills = sorted(_text(skill) for skill in _sequence(config.get("skills")))
        return {
            "format": 1,
            "audience": _text(deployment.get("audience")) or DEFAULT_AUDIENCE,
            "packages": packages,
            "skills": skills,
        }

    # -----------------------------------------------------------------------------------------------------
    # synchronize and recover

    async def synchronize(self, *, context: AgentPreparationContext) -> None:
        """Bring the Agent's external record up to date with the box's actual caches.

        Keeps SYNC-IDENTITY (one record per Agent ID), SYNC-SKIP-UNCHANGED (GET, compare, PUT only on a
        difference), SYNC-NO-LOG-CONFIG (logs IDs and counts only), SYNC-QUIESCENT and GEN-CANCEL-CLEAN (every
        request is awaited, even under cancellation), and lets ``recover`` fence the operation: every write
        carries ``X-Astrabox-Operation``.
        """
        operation = context.operation
        client = self._client(
            context.config, deadline=operation.deadline, operation_id=operation.operation_id
        )
        spec = await self._inventory(context)
        outcome = await self._write_if_changed(client, self._agent_record_key(context), spec, operation)
        logger.info(
            "synchronize agent=%s operation=%s: %d package(s), %d skill(s); external record %s",
            operation.agent_id,
            operation.operation_id,
            len(spec["packages"]),
            len(spec["skills"] or ()),
            outcome,
        )

    def _agent_record_key(self, context: AgentPreparationContext) -> Tuple[str, ...]:
        return ("agents", context.operation.agent_id)

    async def _inventory(self, context: AgentPreparationContext) -> Dict[str, Any]:
        """What the box actually holds: each package's checkout entries and the prepared skills."""
        sandbox = context.sandbox
        packages = []
        for checkout in context.packages:
            source = _mapping(checkout.source)
            packages.append(
                {
                    "name": _text(source.get("name")),
                    "ref": _text(source.get("ref")),
                    "entries": await self._listing(sandbox, checkout.path),
                }
            )
        skills = None
        if context.skills_path:
            skills = await self._listing(sandbox, context.skills_path)
        return {
            "agent_id": context.operation.agent_id,
            "config_version": context.config_version,
            "packages": packages,
            "skills": skills,
        }

    async def _listing(self, sandbox: SandboxHandle, path: str) -> Optional[List[str]]:
        try:
            return sorted(await sandbox.list_dir(path))
        except (FileNotFoundError, NotADirectoryError):
            logger.warning("synchronize: a prepared directory is missing in sandbox %s", sandbox.sandbox_id)
            return None

    async def _write_if_changed(
        self,
        client: DeploymentClient,
        key: Tuple[str, ...],
        spec: Dict[str, Any],
        operation: AgentPreparationOperation,
    ) -> str:
        """Write ``spec`` under ``key`` unless it is already there (or a newer version is). Returns what it did."""
        path = record_path(*key)
        for _ in range(self.CAS_ATTEMPTS):
            version, value = await self._read_record(client, path)
            current = _mapping(value).get("spec") if value is not None else None
            if current == spec:
                return "unchanged"
            if isinstance(current, Mapping) and _number(current.get("config_version")) > spec["config_version"]:
                return "kept (a newer Agent version wrote it)"
            answer = await client.request(
                "PUT", path, {"value": {"spec": spec, "written_by": operation.operation_id}}, if_match=version
            )
            if answer.status == 200:
                return "written"
            if answer.status == 412:
                continue  # another replica or pool member wrote first: read again and compare
            if answer.status == 409:
                raise DeploymentError("PUT %s refused: this operation has been fenced" % path)
            raise DeploymentError("PUT %s answered %d" % (path, answer.status))
        raise DeploymentError("PUT %s kept conflicting after %d attempts" % (path, self.CAS_ATTEMPTS))

    async def _read_record(self, client: DeploymentClient, path: str) -> Tuple[int, Any]:
        """Return ``(version, value)``, or ``(0, None)`` when the record does not exist."""
        answer = await client.request("GET", path)
        if answer.status == 404:
            return 0, None
        body = _mapping(answer.body)
        if answer.status != 200 or "version" not in body:
            raise DeploymentError("GET %s answered %d" % (path, answer.status))
        return int(_number(body.get("version"))), body.get("value")

    async def recover(self, *, operation: AgentPreparationOperation) -> bool:
        """Fence exactly this operation, then report it quiescent.

        Keeps RECOVER-TRUTH (True only once the deployment confirmed the fence, after which even a delayed
        request of the operation is refused), RECOVER-IDEMPOTENT (fencing twice is harmless and answers the
        same; the fence request itself does not carry the operation header, so it is never refused by its
        own fence) and RECOVER-NO-FENCE-NEWER (only ``operation.operation_id`` is named).
        """
        try:
            client = self._client(None, deadline=operation.deadline, operation_id=None)
            answer = await client.request(
                "POST", "/v1/fences", {"agent_id": operation.agent_id, "operation_id": operation.operation_id}
            )
        except DeploymentError as exc:
            logger.warning("recover operation=%s: fence not confirmed (%s)", operation.operation_id, exc)
            return False
        fenced = answer.status == 200 and _mapping(answer.body).get("fenced") == operation.operation_id
        logger.info("recover operation=%s: %s", operation.operation_id, "fenced" if fenced else "not fenced")
        return fenced

    # -----------------------------------------------------------------------------------------------------
    # Session material

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        """Issue a credential for the Session's principal and deliver it as ``token.json``.

        Keeps BOUND-MATERIAL (always returns material or raises), SESSION-NAMES (one safe basename),
        SESSION-FILE-PATH (the variable is ``context.file_path``), SESSION-REDACTION (seams types only),
        SESSION-ENV-RESERVED (``REFERENCE_TOKEN_FILE`` is not platform-owned), UA-VALID (a validated user
        action when consent is pending), LEAK-CROSS-SESSION (a fresh credential per principal) and
        IMAGE-NO-RETROFIT (nothing is written into the box).
        """
        client = self._client(context.config)
        await self._enforce_session_consent(client, context)
        audience = _text(_mapping(context.config.get("deployment")).get("audience")) or self._audience()
        document = await self._issue(client, context.principal_id, audience)
        logger.info(
            "prepare_session session=%s trigger=%s: credential issued", context.session_id, context.trigger
        )
        return RuntimeMaterials(
            files=(RuntimeFile(name=self.TOKEN_FILE, content=_document_bytes(document)),),
            environment=self._session_environment(context),
        )

    async def _enforce_session_consent(self, client: DeploymentClient, context: SessionPreparationContext) -> None:
        await self._require_consent(client, context.principal_id)

    def _session_environment(self, context: SessionPreparationContext) -> Dict[str, str]:
        return {self.TOKEN_ENV: context.file_path(self.TOKEN_FILE)}

    def _audience(self) -> str:
        return os.environ.get("REFERENCE_AUDIENCE", "") or DEFAULT_AUDIENCE

    async def _issue(self, client: DeploymentClient, principal_id: str, audience: str) -> Dict[str, Any]:
        """Ask the credential service for a fresh token and return the token document."""
        answer = await client.request(
            "POST", "/v1/credentials", {"principal_id": principal_id, "audience": audience}
        )
        body = _mapping(answer.body)
        token = body.get("token")
        if answer.status not in (200, 201) or not isinstance(token, str) or not token:
            raise DeploymentError("POST /v1/credentials answered %d" % answer.status)
        lifetime = _number(body.get("expires_in"), default=self.TURN_VALIDITY_SECONDS)
        return {
            "type": "reference-token",
            "principal_id": principal_id,
            "audience": audience,
            "token": token,
            "expires_at": round(time.time() + max(lifetime, 0.0), 3),
        }

    # -----------------------------------------------------------------------------------------------------
    # Turn material

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        """Return the token file for this write attempt, the same on every retry, fresh on refresh.

        Keeps UA-AUTHORITY (consent is checked here on every call), TURN-IDEMPOTENT (the attempt's material
        lives in the deployment under its ``dispatch_attempt_id``, created with ``If-Match: 0``, so a retry on
        any replica gets the same bytes and issues nothing), TURN-FILES-ONLY (files only, the name that
        ``prepare_session`` delivered), TURN-VALIDITY-FRESH (``refresh=True`` issues and stores a new token),
        TURN-WITHIN-DEADLINE and GEN-CANCEL-CLEAN (request timeouts follow the deadline; a cancelled request
        is awaited before the cancellation propagates) and GEN-NO-DISPATCH.
        """
        client = self._client(None, deadline=context.deadline)
        await self._enforce_turn_consent(client, context)
        path = record_path(*self._attempt_key(context))
        if context.refresh:
            material, how = await self._renew_attempt(client, path, context)
        else:
            material, how = await self._attempt_material(client, path, context)
        logger.info("prepare_turn session=%s attempt=%s: %s", context.session_id, context.dispatch_attempt_id, how)
        return self._turn_materials(material)

    async def _enforce_turn_consent(self, client: DeploymentClient, context: TurnPreparationContext) -> None:
        await self._require_consent(client, context.principal_id)

    def _attempt_key(self, context: TurnPreparationContext) -> Tuple[str, ...]:
        return ("turns", context.session_id, context.dispatch_attempt_id)

    def _usable(self, material: Any, context: TurnPreparationContext) -> bool:
        material = _mapping(material)
        document = _mapping(material.get("document"))
        return (
            material.get("session_id") == context.session_id
            and document.get("principal_id") == context.principal_id
            and isinstance(document.get("token"), str)
            and _number(document.get("expires_at")) - time.time() > self.MIN_REMAINING_SECONDS
        )

    async def _load_attempt(self, client: DeploymentClient, path: str) -> Tuple[int, Any]:
        return await self._read_record(client, path)

    async def _store_attempt(self, client: DeploymentClient, path: str, material: Any, version: int) -> bool:
        """Store the attempt's material with compare-and-set; False when somebody else stored first."""
        answer = await client.request("PUT", path, {"value": material}, if_match=version)
        if answer.status == 200:
            return True
        if answer.status == 412:
            return False
        raise DeploymentError("PUT %s answered %d" % (path, answer.status))

    async def _new_material(self, client: DeploymentClient, context: TurnPreparationContext) -> Dict[str, Any]:
        document = await self._issue(client, context.principal_id, self._audience())
        return {"session_id": context.session_id, "document": document}

    async def _attempt_material(
        self, client: DeploymentClient, path: str, context: TurnPreparationContext
    ) -> Tuple[Dict[str, Any], str]:
        version, stored = await self._load_attempt(client, path)
        if self._usable(stored, context):
            return dict(stored), "reused the attempt's material"
        material = await self._new_material(client, context)
        if await self._store_attempt(client, path, material, version):
            return material, "issued material for the attempt"
        # A retry on another replica stored first: use what it stored, so both answers are equivalent.
        version, stored = await self._load_attempt(client, path)
        if self._usable(stored, context):
            return dict(stored), "reused the material a concurrent retry stored"
        raise DeploymentError("the material of this attempt changed concurrently")

    async def _renew_attempt(
        self, client: DeploymentClient, path: str, context: TurnPreparationContext
    ) -> Tuple[Dict[str, Any], str]:
        version, stored = await self._load_attempt(client, path)
        previous = _number(_mapping(_mapping(stored).get("document")).get("expires_at"))
        material = await self._new_material(client, context)
        if await self._store_attempt(client, path, material, version):
            return material, "refreshed the attempt's material"
        version, stored = await self._load_attempt(client, path)
        newer = _number(_mapping(_mapping(stored).get("document")).get("expires_at")) > previous
        if newer and self._usable(stored, context):
            return dict(stored), "reused the material a concurrent refresh stored"
        raise DeploymentError("the material of this attempt changed concurrently")

    def _turn_materials(self, material: Mapping[str, Any]) -> RuntimeMaterials:
        document = _mapping(material.get("document"))
        remaining = _number(document.get("expires_at")) - time.time()
        validity = min(self.TURN_VALIDITY_SECONDS, max(remaining * 0.8, 1.0))
        return RuntimeMaterials(
            files=(RuntimeFile(name=self.TOKEN_FILE, content=_document_bytes(document)),),
            turn_validity_seconds=validity,
        )

    # -----------------------------------------------------------------------------------------------------
    # Consent and user actions

    async def _consent(self, client: DeploymentClient, principal_id: str, *, check: bool = False) -> Mapping[str, Any]:
        path = "/v1/consents/" + quote(principal_id, safe="")
        if check:
            answer = await client.request("POST", path + "/check")
        else:
            answer = await client.request("GET", path)
        body = _mapping(answer.body)
        if answer.status != 200 or not isinstance(body.get("status"), str):
            raise DeploymentError("%s %s answered %d" % ("POST" if check else "GET", path, answer.status))
        return body

    async def _require_consent(self, client: DeploymentClient, principal_id: str) -> None:
        """Raise :class:`PreparationUserActionRequired` unless the principal granted consent."""
        answer = await self._consent(client, principal_id)
        if answer.get("status") == "granted":
            return
        action = await self._user_action(client, principal_id, answer)
        logger.info("consent for principal %s is %s: user action required", principal_id, action["status"])
        raise PreparationUserActionRequired(
            message=action["message"], url=action.get("url"), status=action["status"]
        )

    async def _user_action(
        self, client: DeploymentClient, principal_id: str, answer: Mapping[str, Any]
    ) -> Dict[str, Any]:
        """The user action for a consent answer that is not granted, already valid for the host."""
        status = "pending" if answer.get("status") == "pending" else "unknown"
        action: Dict[str, Any] = {"status": status, "message": CONSENT_MESSAGE}
        url = await self._user_action_url(client, principal_id, answer)
        if url is not None and not validate_user_action(CONSENT_MESSAGE, url, status):
            action["url"] = url
        return action

    async def _user_action_url(
        self, client: DeploymentClient, principal_id: str, answer: Mapping[str, Any]
    ) -> Optional[str]:
        url = answer.get("url")
        return url if isinstance(url, str) and url else None

    async def _state(
        self, client: DeploymentClient, principal_id: str, answer: Mapping[str, Any]
    ) -> SessionUserActionState:
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        action = await self._user_action(client, principal_id, answer)
        return SessionUserActionState(ready=False, user_action=action, actions=(CHECK_CONSENT,))

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        """Report the consent prerequisite of the Session's owner.

        Keeps UA-STATE (``ready=False`` always carries a valid ``user_action``; one action id), UA-VALID and
        LEAK-USER-ACTION (a fixed message and the consent service's URL only). Advisory only: prepare_turn
        checks consent again (UA-AUTHORITY).
        """
        client = self._client(None)
        return await self._state(client, context.owner_id, await self._consent(client, context.owner_id))

    async def perform_user_action(
        self, *, context: SessionUserActionContext, action_id: str
    ) -> SessionUserActionState:
        """Run ``check-consent``: ask the consent service to check again (an idempotent request).

        Keeps UA-IDEMPOTENT (the same request for the same pending requirement, on any replica, changes
        nothing but the consent service's view) and GEN-NO-DISPATCH (never starts a consent flow).
        """
        if action_id != CHECK_CONSENT.id:
            raise ValueError("unknown user action; this provider offers only %r" % CHECK_CONSENT.id)
        client = self._client(None)
        answer = await self._consent(client, context.owner_id, check=True)
        state = await self._state(client, context.owner_id, answer)
        logger.info("perform_user_action session=%s: consent %s", context.session_id, answer.get("status"))
        return state

    # -----------------------------------------------------------------------------------------------------
    # plumbing

    def _client(
        self,
        config: Optional[Mapping[str, Any]],
        *,
        deadline: Optional[float] = None,
        operation_id: Optional[str] = None,
    ) -> DeploymentClient:
        return DeploymentClient(deployment_url(config), deadline=deadline, operation_id=operation_id)
