"""The astrabox provider harness (private; the contract is docs/protocol.md).

Modules:

- ``__main__``: entry script; fixes ``sys.path`` and checks the cookie before importing anything else.
- ``runner``: process start (descriptors, faulthandler), ``hello``, the asyncio main loop that
  serves one call at a time, cancellation, the sync markers and the replies.
- ``wire``: length-prefixed JSON frames on descriptors 3 and 4, the reader loop.
- ``loader``: the ``load`` method (import, introspection, name checks, provider roots).
- ``contexts``: callback arguments from JSON and the ``SandboxHandle`` that forwards to Go.
- ``observe``: installs the observation sources (logs, warnings, audit events, threads) over the parts below.
- ``records``: the typed observation records, mirroring internal/harness/messages.go, with their wire form.
- ``routing``: the call ``ContextVar``; routing each observation to its reply or to the background.
- ``sources``: which code file is the provider's, and the source location of an audit event.
- ``audit``: which audit events are observations, and their secret-free summaries.
- ``leftovers``: the work each call started (threads, jobs, tasks, timers, children), leftovers, settling.
- ``host``: process setup (resource limits, the replica's own host environment, the developer profile).
- ``values``: reply values and errors from provider objects, never failing on odd ones.

Everything here is standard library only and runs on CPython 3.9 to 3.13.
"""
