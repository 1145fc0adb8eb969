"""The astrabox provider harness (private; the contract is docs/protocol.md).

Modules:

- ``__main__``: entry script; fixes ``sys.path`` and checks the cookie before importing anything else.
- ``runner``: process setup (descriptors, rlimits, faulthandler), ``hello``, the asyncio main loop that
  serves one call at a time, cancellation, the sync markers and the replies.
- ``wire``: length-prefixed JSON frames on descriptors 3 and 4, the reader loop.
- ``loader``: the ``load`` method (import, introspection, name checks, provider roots).
- ``contexts``: callback arguments from JSON and the ``SandboxHandle`` that forwards to Go.
- ``observe``: the call ``ContextVar``, logs, warnings, audit events, leftovers and their bounds.
- ``values``: reply values and errors from provider objects, never failing on odd ones.

Everything here is standard library only and runs on CPython 3.9 to 3.13.
"""
