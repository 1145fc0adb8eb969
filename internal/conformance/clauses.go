package conformance

// Clause is one clause of the runtime preparation contract, summarised in the kit's own words. IDs follow
// spec/clauses.md.
type Clause struct {
	ID    string
	Owner string // provider or platform
	Text  string
}

// Clauses lists every clause of the contract.
var Clauses = []Clause{
	{"EP-GROUP", "provider", "Declared as module:Class in the astrabox.providers.runtime_preparation entry-point group."},
	{"EP-SUBCLASS", "provider", "The target derives from astrabox.seams.RuntimePreparationProvider."},
	{"EP-NAME", "provider", "A non-empty name that never changes between instances or processes."},
	{"EP-CONFLICT", "platform", "Two or more providers stop the platform from starting."},
	{"EP-NONE", "platform", "Without a provider, preparation happens with no callbacks."},
	{"EP-DEFAULTS", "platform", "Every callback has a default; providers override only what they need."},
	{"PLAN-SYNC", "provider", "plan is an ordinary (not async) method."},
	{"PLAN-NO-IO", "provider", "plan does no file, network, subprocess or sleep."},
	{"PLAN-STABLE", "provider", "The same configuration always yields the same plan."},
	{"PLAN-DETACHED", "platform", "plan receives a detached, resolved configuration naming no Session."},
	{"BOUND-INIT", "platform", "A session-bound engine is not initialized before real Session material exists."},
	{"BOUND-INVENTORY", "platform", "Session-bound inventory is fully prepared except the engine, holds no Session material, and its receipt says engine_initialized=False."},
	{"BOUND-CLAIM", "platform", "A session-bound claim keeps placement, delivers material and activates the engine fresh."},
	{"BOUND-DISCARD", "platform", "A failed claim discards only the claimed unit and never falls back to a cold start."},
	{"BOUND-GENERATION", "platform", "Provider name and plan declaration feed the runtime generation; a change invalidates waiting inventory."},
	{"BOUND-VAULT", "platform", "Ordinary providers keep initialized prewarming with Vault substitution; session-bound prewarming needs no Vault and resolves credentials at claim."},
	{"BOUND-MATERIAL", "provider", "A session-bound provider returns material from prepare_session."},
	{"IMAGE-NO-RETROFIT", "provider", "No executable written into the box and nothing replaced on the image's PATH."},
	{"SYNC-WHEN", "platform", "synchronize runs once per prepared box after the caches exist and before publication, never on claim, cold start, reattachment or input refresh."},
	{"SYNC-CONTEXT", "platform", "The synchronize context carries the operation, creator, versions, generation, configuration, sandbox, packages and skills path."},
	{"SYNC-IDENTITY", "provider", "External identity is keyed by the Agent ID across versions and pool members."},
	{"SYNC-SKIP-UNCHANGED", "provider", "Unchanged inputs cause no external write."},
	{"SYNC-NO-LOG-CONFIG", "provider", "Trusted configuration is never logged."},
	{"SYNC-CAS", "platform", "The host compares version, refresh revision, pool lifetime and generation around synchronize and refuses superseded results."},
	{"SYNC-QUIESCENT", "provider", "A successful synchronize leaves no external write outstanding."},
	{"SYNC-UNRESOLVED", "platform", "A failed or lost synchronize leaves an unresolved operation for which only recover may run until its deadline."},
	{"RECOVER-TRUTH", "provider", "recover answers True only when that operation can never write again."},
	{"RECOVER-IDEMPOTENT", "provider", "recover gives the same answer however often it is called."},
	{"RECOVER-NO-FENCE-NEWER", "provider", "Recovering one operation never fences a newer one."},
	{"RECOVER-DEFAULT", "platform", "The default recover answers False."},
	{"SESSION-WHEN", "platform", "prepare_session runs before engine activation on every Session start and never during prewarming."},
	{"SESSION-CONTEXT", "platform", "The session context names the persisted owner as principal and carries the IDs, configuration, generation, sandbox and workload identity."},
	{"SESSION-NAMES", "provider", "Returned file names are safe basenames, unique in one result."},
	{"SESSION-FILE-PATH", "provider", "An environment value naming a returned file uses context.file_path(name)."},
	{"SESSION-DELIVERY", "platform", "Files land in the private home, mode 0600, workload-owned, outside the workspace, at a stable path."},
	{"SESSION-REDACTION", "provider", "Material bytes and environment values never appear in a representation or error text."},
	{"SESSION-ENV-FIXED", "platform", "The environment is fixed for the life of the runtime it started."},
	{"SESSION-ENV-ADAPTER", "platform", "Only adapters that support startup environment receive it; others refuse, blocking activation with RUNTIME_PREPARATION_FAILED."},
	{"SESSION-ENV-RESERVED", "provider", "Platform-owned environment names are never returned."},
	{"SESSION-CLI-PROBE", "provider", "An image wrapper gating the CLI lets -v and --version through unchanged."},
	{"TURN-WHEN", "platform", "prepare_turn runs right before each engine write, after reload, slot confirmation and guard claim."},
	{"TURN-IDEMPOTENT", "provider", "prepare_turn is idempotent per dispatch_attempt_id, reconnect retries included."},
	{"TURN-FILES-ONLY", "provider", "prepare_turn returns refreshed files for names prepare_session delivered, and no environment."},
	{"TURN-DEADLINE", "platform", "A timeout, exception or self-cancel refuses the write with TURN_PREPARATION_FAILED; the input never reaches the engine."},
	{"TURN-WITHIN-DEADLINE", "provider", "prepare_turn finishes within its deadline and honours cancellation."},
	{"TURN-VALIDITY", "platform", "With a validity period the host refreshes before it lapses while the write is live; a failed refresh quarantines the guard."},
	{"TURN-VALIDITY-FRESH", "provider", "A refresh returns material valid for a new period."},
	{"TURN-BACKEND", "platform", "Turn preparation needs a profile-exclusive sandbox backend implementing owns_sandbox."},
	{"UA-RAISE", "platform", "PreparationUserActionRequired becomes a validated, non-retryable 409; other exceptions stay generic."},
	{"UA-VALID", "provider", "Raised or returned user actions pass the host's validation."},
	{"UA-NO-RESEND", "platform", "Refused input and images are kept for an explicit retry; nothing is resent."},
	{"UA-ENDPOINTS", "platform", "GET and POST /api/v1/sessions/{id}/user-action with read and write scopes, offered-operation check, SESSION_USER_ACTION_FAILED on errors, sending blocked while unknown or pending."},
	{"UA-IDEMPOTENT", "provider", "perform_user_action is idempotent for the current requirement across replicas."},
	{"UA-STATE", "provider", "Returned user-action states are well formed."},
	{"UA-AUTHORITY", "provider", "prepare_turn enforces pending prerequisites whether or not the state was read."},
	{"GEN-NO-DISPATCH", "provider", "No callback dispatches input, starts consent, registers an Agent or leaves background writes."},
	{"GEN-CANCEL-CLEAN", "provider", "Cancellation leaves no provider write outstanding."},
	{"GEN-SETTLES", "provider", "Every callback returns or raises within its deadline in a process that stays alive."},
	{"GEN-DELIVERY-ACK", "platform", "Acknowledged file delivery completes before the invocation unwinds."},
	{"LEAK-LOG", "provider", "No secret in logs, warnings, stdout or stderr."},
	{"LEAK-ERROR", "provider", "No secret in exception text."},
	{"LEAK-USER-ACTION", "provider", "No secret in user-action messages, URLs or states."},
	{"LEAK-PLAN", "provider", "No secret in the plan's declaration."},
	{"LEAK-INVENTORY", "provider", "No Session material or model/environment credential in unclaimed inventory."},
	{"LEAK-CROSS-SESSION", "provider", "One principal's material never reaches another principal's Session."},
}

// ClauseText returns the kit's summary of a clause.
func ClauseText(id string) (string, bool) {
	for _, c := range Clauses {
		if c.ID == id {
			return c.Text, true
		}
	}
	return "", false
}
