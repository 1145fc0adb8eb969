"""Bytecode of the provider's own modules, cached in the kit's cache and checked against the source's hash.

The harness runs with ``-B`` so that nothing is written into a provider project, which used to mean every
replica compiled the provider's modules again (about 6 ms for the reference provider, more for a big one).
While ``load`` imports the provider, a meta path finder gives the provider's source files a loader that keeps
their bytecode under ``ASTRABOX_PYCACHE/provider/<cache tag>/<absolute path>.pyc``, in the hash-checked pyc
format: the cached code is used only when the hash of the current source matches, so an edit is never hidden
by a stale cache, however quickly it follows the previous run.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import os
import sys
from typing import Any, Callable, Optional

_CHECKED_HASH = 0b11  # pyc flags: hash-based, check the source


class _Loader(importlib.machinery.SourceFileLoader):
    """A source loader whose code comes from the kit's hash-checked cache when it matches the source."""

    cache_dir = ""
    quiet: Any = None

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        source = self.get_data(path)
        digest = importlib.util.source_hash(source)
        cached = _cache_path(self.cache_dir, path)
        with self.quiet():
            try:
                with open(cached, "rb") as fh:
                    blob = fh.read()
                if (blob[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(blob[4:8], "little") == _CHECKED_HASH
                        and blob[8:16] == digest):
                    return marshal.loads(memoryview(blob)[16:])
            except (OSError, ValueError, EOFError, TypeError):
                pass
        code = self.source_to_code(source, path)
        with self.quiet():
            _write(cached, importlib.util.MAGIC_NUMBER + _CHECKED_HASH.to_bytes(4, "little") + digest + marshal.dumps(code))
        return code


def _cache_path(cache_dir: str, source: str) -> str:
    return os.path.join(cache_dir, "provider", sys.implementation.cache_tag or "none",
                        os.path.abspath(source).lstrip(os.sep) + ".pyc")


def _write(path: str, data: bytes) -> None:
    """Write atomically; a cache that cannot be written is simply not used."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


class Finder:
    """Meta path finder, installed for the duration of ``load``: provider source files get :class:`_Loader`."""

    def __init__(self, cache_dir: str, is_provider_file: Callable[[str], bool], quiet: Any) -> None:
        self.cache_dir = cache_dir
        self.is_provider_file = is_provider_file
        self.quiet = quiet

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[Any]:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if (spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader
                or not isinstance(spec.origin, str) or not self.is_provider_file(spec.origin)):
            return None  # not the provider's own source: the ordinary finders handle it
        loader = _Loader(fullname, spec.origin)
        loader.cache_dir, loader.quiet = self.cache_dir, self.quiet
        spec.loader = loader
        return spec


def finder(is_provider_file: Callable[[str], bool], quiet: Any) -> Optional[Finder]:
    """A :class:`Finder` for ``ASTRABOX_PYCACHE``, or None when the kit gave no cache directory."""
    cache = os.environ.get("ASTRABOX_PYCACHE", "")
    if not cache or not os.path.isabs(cache):
        return None
    return Finder(cache, is_provider_file, quiet)
