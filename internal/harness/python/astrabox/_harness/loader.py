"""The ``load`` method: import the target, describe it, instantiate it once."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from astrabox import seams
from astrabox._harness import bytecode
from astrabox._harness.contexts import ArgumentError
from astrabox._harness.observe import Observer
from astrabox._harness.values import callable_name, safe_repr

METHODS = (
    "plan",
    "synchronize",
    "recover",
    "prepare_session",
    "prepare_turn",
    "read_user_actions",
    "perform_user_action",
)


def _is_site_dir(path: str) -> bool:
    parts = os.path.normpath(path).split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def _location(obj: Any) -> Tuple[Optional[str], Optional[int]]:
    try:
        target = inspect.unwrap(obj) if callable(obj) else obj
    except BaseException:  # noqa: B036
        target = obj
    file: Optional[str] = None
    line: Optional[int] = None
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
    except BaseException:  # noqa: B036
        file = None
    code = getattr(target, "__code__", None)
    if code is not None:
        return file or code.co_filename, code.co_firstlineno
    if inspect.isclass(target) and file:
        line = _class_line(target, file)
        if line is not None:
            return file, line
    try:
        line = inspect.getsourcelines(target)[1]
    except BaseException:  # noqa: B036
        line = None
    return file, line


def _class_line(cls: Any, file: str) -> Optional[int]:
    """The line of ``class Name`` in ``file``, found cheaply: ``__firstlineno__`` (3.13+), else the one line of
    the file that starts that class statement. ``None`` when that is ambiguous (``inspect`` then parses the
    module, which costs tens of milliseconds on a large file)."""
    line = getattr(cls, "__firstlineno__", None)
    if isinstance(line, int) and not isinstance(line, bool):
        return line
    try:
        import linecache

        name = cls.__name__
        found = []
        for i, text in enumerate(linecache.getlines(file)):
            if name in text:
                m = _CLASS_STATEMENT.match(text)
                if m is not None and m.group(1) == name:
                    found.append(i + 1)
    except BaseException:  # noqa: B036
        return None
    return found[0] if len(found) == 1 else None


#: The start of a class statement and its name: one pattern compiled once (in a fork server, once for every
#: replica), instead of one per load built from the class's name (compiling it was most of a small load).
_CLASS_STATEMENT = re.compile(r"\s*class\s+(\w+)")


def _resolve(target: str) -> Tuple[Any, Any, str]:
    if not isinstance(target, str) or ":" not in target:
        raise ArgumentError("target %r must look like 'package.module:Attribute'" % (target,))
    module_name, _, attr_path = target.partition(":")
    if not module_name or not attr_path:
        raise ArgumentError("target %r must look like 'package.module:Attribute'" % (target,))
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(
                "%s has no attribute %r (entry point %s)" % (safe_repr(obj, 200), part, target)
            ) from None
    return module, obj, module_name


def provider_pkg_dir(module_name: str) -> Optional[str]:
    top = sys.modules.get(module_name.split(".")[0])
    if top is None:
        return None
    path = getattr(top, "__path__", None)
    if path is not None:
        file = getattr(top, "__file__", None)
        if isinstance(file, str):
            return os.path.dirname(os.path.abspath(file))
        for p in list(path):
            return os.path.abspath(p)
        return None
    file = getattr(top, "__file__", None)
    return os.path.dirname(os.path.abspath(file)) if isinstance(file, str) else None


def _name_info(obj: Any, instance: Any, is_class: bool) -> Dict[str, Any]:
    cls = obj if is_class else type(obj)
    in_class = None
    for klass in getattr(cls, "__mro__", ()):
        if klass is seams.RuntimePreparationProvider or klass is object:
            break
        if "name" in vars(klass):
            in_class = vars(klass)["name"]
            break
    name_is_classattr = isinstance(in_class, str)
    if name_is_classattr:
        name: Any = in_class
    else:
        holder = instance if instance is not None else obj
        try:
            name = getattr(holder, "name", None)
        except BaseException:  # noqa: B036
            name = None
    error: Optional[str] = None
    if in_class is not None and not isinstance(in_class, str):
        error = "name is a %s on the class (a property or method?); it must be a plain str class attribute" % (
            type(in_class).__name__
        )
    elif not name_is_classattr and isinstance(name, str) and name:
        error = "name %r is set on the instance, not as a class attribute; declare `name = %r` in the class body" % (
            name, name,
        )
    elif not name_is_classattr:
        error = "name is not set; add a class attribute such as `name = \"enterprise\"`"
    elif not name:
        error = "name is empty; set a non-empty class attribute such as `name = \"enterprise\"`"
    elif not seams.is_valid_provider_name(name):
        error = "name %r does not match [a-z0-9][a-z0-9._-]{0,62}" % (name,)
    if name is not None and not isinstance(name, str):
        name = safe_repr(name, 200)
    return {"name": name, "name_is_classattr": name_is_classattr, "name_error": error}


_BASE_LOCATIONS: Dict[str, Tuple[Optional[str], Optional[int]]] = {}


def base_locations() -> Dict[str, Tuple[Optional[str], Optional[int]]]:
    """Where the SDK's base class defines each callback: the same for every provider, so found once per
    interpreter (a fork server finds them once for every replica it forks) instead of once per load."""
    if not _BASE_LOCATIONS:
        for m in METHODS:
            _BASE_LOCATIONS[m] = _location(seams.RuntimePreparationProvider.__dict__[m])
    return _BASE_LOCATIONS


def _method_info(cls: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    base = seams.RuntimePreparationProvider
    for m in METHODS:
        try:
            static = inspect.getattr_static(cls, m)
        except AttributeError:
            out[m] = {"overridden": False, "async": False, "file": None, "line": None, "present": False}
            continue
        func = static
        if isinstance(func, (staticmethod, classmethod)):
            func = func.__func__
        overridden = static is not base.__dict__[m]
        try:
            is_async = inspect.iscoroutinefunction(inspect.unwrap(func)) if callable(func) else False
        except BaseException:  # noqa: B036
            is_async = False
        if not overridden:
            file, line = base_locations()[m]
        else:
            file, line = _location(func) if callable(func) else (None, None)
        out[m] = {"overridden": overridden, "async": is_async, "file": file, "line": line}
        if not callable(func):
            out[m]["problem"] = "%s is a %s, not a method" % (m, type(func).__name__)
    return out


class Loaded:
    """The result of a successful load: the value for the reply and the instance to call."""

    def __init__(self, value: Dict[str, Any], instance: Any) -> None:
        self.value = value
        self.instance = instance


def fresh_finders(paths: List[str]) -> None:
    """Make the provider's roots get path finders of their own, listing their directories anew.

    This replaces ``importlib.invalidate_caches()``, which touched every path finder the interpreter had (in
    a forked replica, a copy-on-write page fault for each: about 55 faults and 2 ms a replica,
    docs/performance.md). A root's finder is dropped from ``sys.path_importer_cache``, so the import makes a
    new one that reads the directory as it is now. The interpreter's other finders (the standard library,
    site-packages, the SDK: filled when the harness or its fork server started, which invalidated them once,
    ``zygote.preload``) see a changed directory by its modification time on every lookup, as in any Python
    process; and nothing writes a module there between that start and the load.
    """
    cache = sys.path_importer_cache
    for p in paths:
        cache.pop(p, None)


def load(args: Any, observer: Observer) -> Loaded:
    """Perform ``load`` (see protocol.md). Raises the provider's exception on import/constructor failure."""
    if not isinstance(args, dict):
        raise ArgumentError("args must be an object")
    target = args.get("target")
    paths = args.get("paths") or []
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ArgumentError("args.paths must be a list of strings")
    if args.get("force_debug_logging"):
        logging.getLogger().setLevel(logging.DEBUG)
    for p in reversed(paths):
        while p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)
    # A site-packages directory is never a provider root (files under one only count inside the
    # provider's own package); observe.Observer applies the same rule to every root.
    roots = [p for p in paths if not _is_site_dir(p)]
    # Frames of an import failure are attributed to the given paths already.
    observer.set_roots([], roots)
    fresh_finders(paths)
    cache = bytecode.finder(observer.is_provider_file, observer.quiet)
    if cache is not None:
        sys.meta_path.insert(0, cache)
    try:
        module, obj, module_name = _resolve(target)
    finally:
        if cache is not None and cache in sys.meta_path:
            sys.meta_path.remove(cache)
    pkg_dir = provider_pkg_dir(module_name)
    with observer.quiet():
        observer.set_roots([pkg_dir] if pkg_dir else [], roots)
        is_class = inspect.isclass(obj)
        is_subclass = bool(is_class and issubclass(obj, seams.RuntimePreparationProvider))
        file, line = _location(obj)
    instance = obj() if is_subclass else None
    with observer.quiet():
        value = describe(module, obj, instance, (file, line),
                         ([pkg_dir] if pkg_dir else []) + [r for r in roots if r != pkg_dir])
    return Loaded(value, instance)


def describe(module: Any, obj: Any, instance: Any, location: Tuple[Optional[str], Optional[int]],
             provider_roots: List[str]) -> Dict[str, Any]:
    """The value of a ``load`` reply: what the entry point's target ``obj`` of ``module`` is, where it is
    defined (``location``), its instance (None when it is not a subclass of the SDK's base or was not made),
    its name and methods, and the provider roots. The fork server's rehearsal describes a class of its own
    through this same function, so that the code every replica's load runs is warm before the fork."""
    is_class = inspect.isclass(obj)
    is_subclass = bool(is_class and issubclass(obj, seams.RuntimePreparationProvider))
    qualname = getattr(obj, "__qualname__", None)
    value: Dict[str, Any] = {
        "module_file": getattr(module, "__file__", None),
        "qualname": qualname if isinstance(qualname, str) else callable_name(obj),
        "file": location[0],
        "line": location[1],
        "is_class": is_class,
        "is_subclass": is_subclass,
        "instantiated": instance is not None,
    }
    value.update(_name_info(obj, instance, is_class))
    value["provider_roots"] = provider_roots
    value["methods"] = _method_info(obj if is_class else type(obj))
    return value
