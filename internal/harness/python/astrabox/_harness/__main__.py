"""Entry script of the astrabox provider harness: ``python -B SDK/astrabox/_harness/__main__.py``.

Before anything else is imported, ``sys.path`` is made to start with the SDK directory, and ``''``, the
working directory and this script's own directory are dropped, so that neither the harness nor the
provider shadows the other. The provider's code roots are added by ``load``.
"""

import os
import sys


def _fix_sys_path():
    here = os.path.dirname(os.path.abspath(__file__))
    sdk = os.path.dirname(os.path.dirname(here))
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    drop = {os.path.realpath(here), os.path.realpath(sdk)}
    if cwd is not None:
        drop.add(cwd)
    kept = [sdk]
    for entry in sys.path:
        if entry in ("", "."):
            continue
        try:
            real = os.path.realpath(entry)
        except (OSError, ValueError):
            real = entry
        if real in drop:
            continue
        kept.append(entry)
    sys.path[:] = kept


_fix_sys_path()

if not os.environ.get("ASTRABOX_HARNESS_COOKIE"):
    sys.stderr.write(
        "This is the astrabox provider harness. It is started by the astrabox command, not by hand.\n"
        "Run `astrabox conformance run` in your provider project instead.\n"
    )
    sys.exit(1)



def _import_runner():
    """Import the harness with its bytecode cached under ``ASTRABOX_PYCACHE`` (kit-owned, never beside a
    source file), then go back to writing no bytecode before any provider module is imported.

    Compiling the SDK costs tens of milliseconds per process start; the cache removes it from every start
    but the first. The provider's own modules stay uncached, as ``-B`` asks: the kit leaves no
    ``__pycache__`` in a provider project.
    """
    cache = os.environ.get("ASTRABOX_PYCACHE", "")
    saved = (sys.pycache_prefix, sys.dont_write_bytecode)
    if cache and os.path.isabs(cache):
        sys.pycache_prefix, sys.dont_write_bytecode = cache, False
    try:
        from astrabox._harness import runner  # noqa: E402 - after the sys.path fix on purpose

        if os.environ.get("ASTRABOX_HARNESS_ZYGOTE") == "1":
            from astrabox._harness import zygote  # noqa: E402
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved
    return runner


if os.environ.get("ASTRABOX_HARNESS_ZYGOTE") == "1":
    # A fork server (zygote.py): forks harness processes that run runner.main() with their own environment.
    _runner = _import_runner()
    from astrabox._harness import zygote  # noqa: E402

    zygote.serve(_runner)
else:
    _import_runner().main()
