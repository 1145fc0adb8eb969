"""Fabrikam's runtime preparation provider.

Every Session and turn receives ``fabrikam-token.json``: an access token for the Session's principal, issued
by Fabrikam's login service (OAuth2 client credentials). Everything that must survive a replica is kept in
Vault's KV v2 engine, always written with check-and-set:

- ``sessions/<session>``: the Session's principal and the deployment URL its consent is read from (turns and
  user actions receive no configuration);
- ``attempts/<session>/<attempt>``: the material of one dispatch attempt, so every retry answers the same;
- ``agents/<agent>``: the Agent record ``synchronize`` keeps up to date;
- ``fences/<operation>``: written by ``recover``; Vault refuses the fenced operation's later writes.

Consent comes from the deployment's consent API, at ``deployment.base_url`` of the Agent configuration.
Each decision lives in one small method so that a variant can change one decision.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

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

from .consent import consent, deployment_url
from .http import ServiceError
from .oauth import issue_token
from .vault import Vault, Written

__all__ = ["VaultOAuthProvider"]

logger = logging.getLogger("fabrikam_vault")

DEFAULT_AUDIENCE = "fabrikam-tools"
CONSENT_MESSAGE = "Grant Fabrikam tools access for this Agent, then send your message again."
RECHECK = SessionUserActionCommand(id="recheck-access", label="I granted access")
CAS_ATTEMPTS = 3


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


class VaultOAuthProvider(RuntimePreparationProvider):
    """Session-bound: per-principal OAuth2 tokens, state in Vault KV v2."""

    name = "fabrikam-vault"

    TOKEN_FILE = "fabrikam-token.json"
    TOKEN_ENV = "FABRIKAM_TOKEN_FILE"
    TURN_VALIDITY_SECONDS = 240.0
    MIN_REMAINING_SECONDS = 5.0

    # ---------------------------------------------------------------------------------------------- plan

    def __init__(self) -> None:
        #: The deployment URL of the last configuration this process saw (see ``_consent_url``).
        self._deployment: Optional[str] = None

    def _remember(self, config: Optional[Mapping[str, Any]]) -> Optional[str]:
        url = deployment_url(config)
        if url is not None:
            self._deployment = url
        return url

    def _consent_url(self, session: Mapping[str, Any]) -> str:
        """Where consent is read for a turn or a user action, which receive no configuration: the deployment
        this process was configured with, else the one the Session's record names (written by the replica
        that prepared the Session)."""
        return self._deployment or _text(session.get("deployment_url"))

    def _vault(self, *, deadline: Optional[float] = None, operation_id: Optional[str] = None) -> Vault:
        return Vault(deadline=deadline, operation_id=operation_id)

    def plan(self, *, config: Mapping[str, Any]) -> RuntimePreparationPlan:
        """PLAN-SYNC, PLAN-NO-IO, PLAN-STABLE, LEAK-PLAN: a pure function of the non-secret configuration."""
        self._remember(config)
        packages = [
            {"name": _text(_mapping(p).get("name")), "ref": _text(_mapping(p).get("ref"))}
            for p in (config.get("packages") or ())
            if isinstance(p, Mapping)
        ]
        skills = sorted(_text(s) for s in (config.get("skills") or ()) if isinstance(s, str))
        return RuntimePreparationPlan(
            session_bound=True,
            declaration={"format": 1, "audience": self._audience(config), "packages": packages, "skills": skills},
        )

    def _audience(self, config: Optional[Mapping[str, Any]]) -> str:
        return _text(_mapping(_mapping(config).get("deployment")).get("audience")) or DEFAULT_AUDIENCE

    # ------------------------------------------------------------------------------- synchronize, recover

    async def synchronize(self, *, context: AgentPreparationContext) -> None:
        """SYNC-IDENTITY, SYNC-SKIP-UNCHANGED (read, compare, write only a difference), SYNC-NO-LOG-CONFIG,
        SYNC-QUIESCENT and GEN-CANCEL-CLEAN (every request is awaited); writes carry the operation id."""
        operation = context.operation
        self._remember(context.config)
        vault = self._vault(deadline=operation.deadline, operation_id=operation.operation_id)
        spec = await self._inventory(context)
        outcome = await self._write_if_changed(vault, self._agent_key(context), spec, operation)
        logger.info(
            "synchronize agent=%s operation=%s: %d package(s); agent record %s",
            operation.agent_id, operation.operation_id, len(spec["packages"]), outcome,
        )

    def _agent_key(self, context: AgentPreparationContext) -> Tuple[str, ...]:
        return ("agents", context.operation.agent_id)

    async def _inventory(self, context: AgentPreparationContext) -> Dict[str, Any]:
        packages = []
        for checkout in context.packages:
            source = _mapping(checkout.source)
            packages.append(
                {
                    "name": _text(source.get("name")),
                    "ref": _text(source.get("ref")),
                    "entries": await self._listing(context.sandbox, checkout.path),
                }
            )
        skills = await self._listing(context.sandbox, context.skills_path) if context.skills_path else None
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
            return None

    async def _write_if_changed(
        self, vault: Vault, key: Tuple[str, ...], spec: Dict[str, Any], operation: AgentPreparationOperation
    ) -> str:
        for _ in range(CAS_ATTEMPTS):
            version, data = await vault.read(*key)
            current = _mapping(data).get("spec") if data is not None else None
            if current == spec:
                return "unchanged"
            if isinstance(current, Mapping) and _number(current.get("config_version")) > spec["config_version"]:
                return "kept (a newer Agent version wrote it)"
            outcome = await vault.write({"spec": spec, "written_by": operation.operation_id}, version, *key)
            if outcome == Written.OK:
                return "written"
            if outcome == Written.REFUSED:
                raise ServiceError("vault refused the agent record: this operation has been fenced")
        raise ServiceError("the agent record kept conflicting after %d attempts" % CAS_ATTEMPTS)

    async def recover(self, *, operation: AgentPreparationOperation) -> bool:
        """RECOVER-TRUTH (True only once Vault holds the fence, after which it refuses the operation's writes),
        RECOVER-IDEMPOTENT (an existing fence answers the same) and RECOVER-NO-FENCE-NEWER (this operation only)."""
        vault = self._vault(deadline=operation.deadline)  # the fence itself carries no operation id
        key = ("fences", operation.operation_id)
        try:
            outcome = await vault.write({"agent_id": operation.agent_id, "operation_id": operation.operation_id}, 0, *key)
            if outcome != Written.OK:
                _, data = await vault.read(*key)
                outcome = Written.OK if _mapping(data).get("operation_id") == operation.operation_id else outcome
        except ServiceError as exc:
            logger.warning("recover operation=%s: fence not confirmed (%s)", operation.operation_id, exc)
            return False
        logger.info("recover operation=%s: %s", operation.operation_id, "fenced" if outcome == Written.OK else "not fenced")
        return outcome == Written.OK

    # --------------------------------------------------------------------------------------------- Session

    async def prepare_session(self, *, context: SessionPreparationContext) -> RuntimeMaterials:
        """BOUND-MATERIAL, SESSION-NAMES, SESSION-FILE-PATH, SESSION-REDACTION, SESSION-ENV-RESERVED, UA-VALID,
        LEAK-CROSS-SESSION (a fresh token per principal) and IMAGE-NO-RETROFIT."""
        base = self._remember(context.config)
        if base is None:
            raise ServiceError("the Agent configuration names no deployment.base_url")
        await self._bind_session(context, base)
        await self._require_consent(base, context.principal_id, None)
        document = await self._issue(context.principal_id, self._audience(context.config), None)
        logger.info("prepare_session session=%s trigger=%s: token issued", context.session_id, context.trigger)
        return RuntimeMaterials(
            files=(RuntimeFile(name=self.TOKEN_FILE, content=self._bytes(document)),),
            environment={self.TOKEN_ENV: context.file_path(self.TOKEN_FILE)},
        )

    async def _bind_session(self, context: SessionPreparationContext, base: str) -> None:
        """Keep ``sessions/<id>`` naming the principal and the deployment URL (written only when it differs)."""
        vault = self._vault()
        want = {"principal_id": context.principal_id, "deployment_url": base, "audience": self._audience(context.config)}
        for _ in range(CAS_ATTEMPTS):
            version, data = await vault.read("sessions", context.session_id)
            if data == want:
                return
            if await vault.write(want, version, "sessions", context.session_id) == Written.OK:
                return
        raise ServiceError("the session record kept conflicting")

    async def _session(self, session_id: str, deadline: Optional[float]) -> Mapping[str, Any]:
        _, data = await self._vault(deadline=deadline).read("sessions", session_id)
        if not data or not _text(data.get("deployment_url")):
            raise ServiceError("no session record for this Session: prepare_session has not run")
        return data

    async def _issue(self, principal_id: str, audience: str, deadline: Optional[float]) -> Dict[str, Any]:
        grant = await issue_token(principal_id, audience, deadline=deadline)
        lifetime = _number(grant.get("expires_in")) or self.TURN_VALIDITY_SECONDS
        return {
            "type": "fabrikam-token",
            "principal_id": principal_id,
            "audience": audience,
            "access_token": grant["access_token"],
            "expires_at": round(time.time() + lifetime, 3),
        }

    @staticmethod
    def _bytes(document: Mapping[str, Any]) -> bytes:
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")

    # ------------------------------------------------------------------------------------------------ turn

    async def prepare_turn(self, *, context: TurnPreparationContext) -> RuntimeMaterials:
        """UA-AUTHORITY (consent on every call), TURN-IDEMPOTENT (the attempt's material is created in Vault with
        ``cas=0``; a retry on any replica reads it back), TURN-FILES-ONLY, TURN-VALIDITY-FRESH (a refresh issues
        and stores a new token), TURN-WITHIN-DEADLINE, GEN-CANCEL-CLEAN and GEN-NO-DISPATCH."""
        session = await self._session(context.session_id, context.deadline)
        await self._require_consent(self._consent_url(session), context.principal_id, context.deadline)
        audience = _text(session.get("audience")) or DEFAULT_AUDIENCE
        vault = self._vault(deadline=context.deadline)
        key = self._attempt_key(context)
        if context.refresh:
            material, how = await self._renew(vault, key, context, audience)
        else:
            material, how = await self._attempt_material(vault, key, context, audience)
        logger.info("prepare_turn session=%s attempt=%s: %s", context.session_id, context.dispatch_attempt_id, how)
        document = _mapping(material.get("document"))
        remaining = _number(document.get("expires_at")) - time.time()
        return RuntimeMaterials(
            files=(RuntimeFile(name=self.TOKEN_FILE, content=self._bytes(document)),),
            turn_validity_seconds=min(self.TURN_VALIDITY_SECONDS, max(remaining * 0.8, 1.0)),
        )

    def _attempt_key(self, context: TurnPreparationContext) -> Tuple[str, ...]:
        return ("attempts", context.session_id, context.dispatch_attempt_id)

    def _usable(self, material: Any, context: TurnPreparationContext) -> bool:
        document = _mapping(_mapping(material).get("document"))
        return (
            _mapping(material).get("session_id") == context.session_id
            and document.get("principal_id") == context.principal_id
            and isinstance(document.get("access_token"), str)
            and _number(document.get("expires_at")) - time.time() > self.MIN_REMAINING_SECONDS
        )

    async def _new_material(self, context: TurnPreparationContext, audience: str) -> Dict[str, Any]:
        return {"session_id": context.session_id, "document": await self._issue(context.principal_id, audience, context.deadline)}

    async def _attempt_material(
        self, vault: Vault, key: Tuple[str, ...], context: TurnPreparationContext, audience: str
    ) -> Tuple[Mapping[str, Any], str]:
        version, stored = await vault.read(*key)
        if self._usable(stored, context):
            return stored, "reused the attempt's material"
        material = await self._new_material(context, audience)
        if await vault.write(material, version, *key) == Written.OK:
            return material, "issued material for the attempt"
        _, stored = await vault.read(*key)  # a retry on another replica stored first: answer what it stored
        if self._usable(stored, context):
            return stored, "reused the material a concurrent retry stored"
        raise ServiceError("the material of this attempt changed concurrently")

    async def _renew(
        self, vault: Vault, key: Tuple[str, ...], context: TurnPreparationContext, audience: str
    ) -> Tuple[Mapping[str, Any], str]:
        version, stored = await vault.read(*key)
        previous = _number(_mapping(_mapping(stored).get("document")).get("expires_at"))
        material = await self._new_material(context, audience)
        if await vault.write(material, version, *key) == Written.OK:
            return material, "refreshed the attempt's material"
        _, stored = await vault.read(*key)
        if self._usable(stored, context) and _number(_mapping(_mapping(stored).get("document")).get("expires_at")) > previous:
            return stored, "reused the material a concurrent refresh stored"
        raise ServiceError("the material of this attempt changed concurrently")

    # ----------------------------------------------------------------------------------- consent, actions

    async def _require_consent(self, base: str, principal_id: str, deadline: Optional[float]) -> None:
        answer = await consent(base, principal_id, deadline=deadline)
        if answer.get("status") == "granted":
            return
        action = self._user_action(answer)
        raise PreparationUserActionRequired(message=action["message"], url=action.get("url"), status=action["status"])

    def _user_action(self, answer: Mapping[str, Any]) -> Dict[str, Any]:
        status = "pending" if answer.get("status") == "pending" else "unknown"
        action: Dict[str, Any] = {"status": status, "message": CONSENT_MESSAGE}
        url = answer.get("url")
        if isinstance(url, str) and url and not validate_user_action(CONSENT_MESSAGE, url, status):
            action["url"] = url
        return action

    def _state(self, answer: Mapping[str, Any]) -> SessionUserActionState:
        if answer.get("status") == "granted":
            return SessionUserActionState(ready=True)
        return SessionUserActionState(ready=False, user_action=self._user_action(answer), actions=(RECHECK,))

    async def read_user_actions(self, *, context: SessionUserActionContext) -> SessionUserActionState:
        """UA-STATE, UA-VALID, LEAK-USER-ACTION: a fixed message and the consent service's URL only."""
        session = await self._session(context.session_id, None)
        return self._state(await consent(self._consent_url(session), context.owner_id))

    async def perform_user_action(self, *, context: SessionUserActionContext, action_id: str) -> SessionUserActionState:
        """UA-IDEMPOTENT (an idempotent re-check, nothing else written) and GEN-NO-DISPATCH."""
        if action_id != RECHECK.id:
            raise ValueError("unknown user action; this provider offers only %r" % RECHECK.id)
        session = await self._session(context.session_id, None)
        answer = await self._recheck(self._consent_url(session), context)
        logger.info("perform_user_action session=%s: consent %s", context.session_id, answer.get("status"))
        return self._state(answer)

    async def _recheck(self, base: str, context: SessionUserActionContext) -> Mapping[str, Any]:
        return await consent(base, context.owner_id, check=True)
