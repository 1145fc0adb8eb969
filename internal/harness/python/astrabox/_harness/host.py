"""Process setup of a harness: resource limits, a host environment of its own, and the developer profile."""

from __future__ import annotations

import os
import sys
from typing import Any


def _limit(name: str, resource_id: int, notes: list) -> None:
    import resource

    raw = os.environ.get(name, "0") or "0"
    try:
        value = int(raw)
    except ValueError:
        notes.append("%s=%r is not an integer; left as is" % (name, raw))
        return
    if value <= 0:
        return
    try:
        _, hard = resource.getrlimit(resource_id)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(resource_id, (value, value))
    except (ValueError, OSError) as exc:
        notes.append("could not apply %s=%d: %s" % (name, value, exc))


def apply_limits() -> None:
    """``RLIMIT_CORE=0`` and the address-space and open-files limits from the environment."""
    import resource

    notes: list = []
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError) as exc:
        notes.append("could not disable core dumps: %s" % exc)
    _limit("ASTRABOX_LIMIT_AS", resource.RLIMIT_AS, notes)
    _limit("ASTRABOX_LIMIT_NOFILE", resource.RLIMIT_NOFILE, notes)
    for note in notes:
        try:
            os.write(2, ("astrabox harness: %s\n" % note).encode())
        except OSError:
            pass


def become_host() -> None:
    """Forget what a fork server computed from its own environment, so that this replica sees its own host:
    ``tempfile`` caches the temporary directory it chose (TMPDIR and HOME come per replica from Go)."""
    mod = sys.modules.get("tempfile")
    if mod is not None:
        mod.tempdir = None  # type: ignore[attr-defined]


_PROFILE: Any = None


def start_profile() -> None:
    """With ``ASTRABOX_PROFILE_DIR`` set (a developer knob, see docs/performance.md), profile this process with
    cProfile from here to its shutdown: on the wall clock, or with ``ASTRABOX_PROFILE_CLOCK=cpu`` on the
    process's CPU time (every thread's: time the main thread spends waiting while another computes is counted
    where it waits)."""
    global _PROFILE
    if os.environ.get("ASTRABOX_PROFILE_DIR"):
        import cProfile

        if os.environ.get("ASTRABOX_PROFILE_CLOCK") == "cpu":
            import time

            _PROFILE = cProfile.Profile(time.process_time)
        else:
            _PROFILE = cProfile.Profile()
        _PROFILE.enable()


def dump_profile() -> None:
    """Write the profile to ``ASTRABOX_PROFILE_DIR/harness-<pid>.prof`` (pstats format), if one runs."""
    if _PROFILE is None:
        return
    _PROFILE.disable()
    try:
        _PROFILE.dump_stats(os.path.join(os.environ["ASTRABOX_PROFILE_DIR"], "harness-%d.prof" % os.getpid()))
    except (OSError, KeyError):
        pass
