"""Turning provider objects into protocol JSON without ever crashing on them.

Every helper here survives a ``repr`` that raises, a ``str`` that recurses, self-referencing containers
and non-finite floats: the harness reports odd provider output, it never dies of it.
"""

from __future__ import annotations

import base64
import math
import traceback
import types
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple

from astrabox import seams
from astrabox._harness.records import (KIND_BOOL, KIND_MATERIALS, KIND_NONE, KIND_OTHER, KIND_PLAN,
                                       KIND_USER_ACTION_STATE, ActionCommand, MaterialFile, Result,
                                       ResultTypeError)

REPR_LIMIT = 4 * 1024
MESSAGE_LIMIT = 8 * 1024
TRACEBACK_LIMIT = 64 * 1024
_MAX_DEPTH = 64


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + "... [%d characters truncated]" % (len(text) - limit)


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of ``text`` (tracebacks: the innermost frames are at the end)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n... [%d characters truncated] ...\n" % (len(text) - 2 * half) + text[-half:]


def type_name(tp: Any) -> str:
    """``module.QualName`` of a type; builtins without their module."""
    try:
        module = getattr(tp, "__module__", None)
        qual = getattr(tp, "__qualname__", None) or getattr(tp, "__name__", None) or "?"
        if not isinstance(qual, str):
            qual = "?"
        if module in (None, "builtins") or not isinstance(module, str):
            return qual
        return module + "." + qual
    except BaseException:
        return "?"


def callable_name(fn: Any) -> str:
    """A readable ``module.qualname`` for a function, method or other callable."""
    try:
        import functools

        while isinstance(fn, functools.partial):
            fn = fn.func
        module = getattr(fn, "__module__", None)
        qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
        if qual is None:
            return type_name(type(fn))
        if module and isinstance(module, str):
            return "%s.%s" % (module, qual)
        return str(qual)
    except BaseException:
        return "?"


def safe_repr(obj: Any, limit: int = REPR_LIMIT) -> str:
    """``repr(obj)`` truncated, or a placeholder saying that repr failed."""
    try:
        text = repr(obj)
        if not isinstance(text, str):
            raise TypeError("repr returned %s" % type(text).__name__)
    except BaseException as exc:  # noqa: B036 - provider code may raise anything, even SystemExit
        return "<%s object; repr() raised %s>" % (type_name(type(obj)), type_name(type(exc)))
    return truncate(text, limit)


def safe_str(obj: Any, limit: int = MESSAGE_LIMIT) -> str:
    """``str(obj)`` truncated, or a placeholder saying that str failed."""
    try:
        text = str(obj)
        if not isinstance(text, str):
            raise TypeError("str returned %s" % type(text).__name__)
    except BaseException as exc:  # noqa: B036
        return "<str() raised %s>" % type_name(type(exc))
    return truncate(text, limit)


def float_value(value: float) -> Any:
    """A float as JSON: non-finite values become the strings ``inf``, ``-inf`` and ``nan``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def jsonsafe(obj: Any, depth: int = 0) -> Any:
    """A lenient JSON form of ``obj``: unknown objects become their repr, nothing ever raises."""
    try:
        if obj is None or isinstance(obj, (bool, str)):
            return truncate(obj, MESSAGE_LIMIT) if isinstance(obj, str) else obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float_value(float(obj))
        if depth >= _MAX_DEPTH:
            return "<nested too deep>"
        if isinstance(obj, Mapping):
            out: Dict[str, Any] = {}
            for key, value in list(obj.items())[:1000]:
                out[key if isinstance(key, str) else safe_repr(key, 200)] = jsonsafe(value, depth + 1)
            return out
        if isinstance(obj, (list, tuple)):
            return [jsonsafe(v, depth + 1) for v in list(obj)[:1000]]
        return safe_repr(obj)
    except BaseException:  # noqa: B036
        return "<unrepresentable %s>" % type_name(type(obj))


class DeclarationError(Exception):
    """A declaration that is not strict JSON."""


def strict_json(obj: Any, where: str = "declaration", depth: int = 0) -> Any:
    """Convert ``obj`` to JSON exactly, or raise :class:`DeclarationError` saying where and why.

    Mappings need str keys; lists and tuples become arrays; floats must be finite. The path of each value
    (``declaration['packages'][0]``) is spelled out only when something is wrong: a valid declaration, every
    call's case, costs no string formatting.
    """
    try:
        return _strict_json(obj, depth)
    except _Bad as bad:
        path = where
        for step in reversed(bad.steps):
            path = "%s[%r]" % (path, step)
        raise DeclarationError(bad.why(path)) from None


class _Bad(Exception):
    """What :func:`_strict_json` found wrong; ``steps`` (innermost first) lead from the root to it."""

    def __init__(self, why: Callable[[str], str]) -> None:
        super().__init__()
        self.why = why
        self.steps: List[Any] = []


def _strict_json(obj: Any, depth: int) -> Any:
    t = type(obj)
    if t is str or t is bool or t is int or obj is None:  # the common leaves, exactly as below, sooner
        return obj
    if t is dict and depth < _MAX_DEPTH:
        out: Dict[str, Any] = {}
        for key, value in obj.items():
            if type(key) is not str:
                return _strict_json_any(obj, depth)  # say what is wrong with the key, as below
            try:
                out[key] = _strict_json(value, depth + 1)
            except _Bad as bad:
                bad.steps.append(key)
                raise
        return out
    return _strict_json_any(obj, depth)


def _strict_json_any(obj: Any, depth: int) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise _Bad(lambda where: "%s is %r, which JSON cannot hold" % (where, obj))
        return float(obj)
    if depth >= _MAX_DEPTH:
        raise _Bad(lambda where: "%s is nested more than %d levels deep (a cycle?)" % (where, _MAX_DEPTH))
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise _Bad(lambda where: "%s has a %s key %s; keys must be str" % (where, type_name(type(key)), safe_repr(key, 80)))
            try:
                out[key] = _strict_json(value, depth + 1)
            except _Bad as bad:
                bad.steps.append(key)
                raise
        return out
    if isinstance(obj, (list, tuple)):
        items = []
        for i, v in enumerate(obj):
            try:
                items.append(_strict_json(v, depth + 1))
            except _Bad as bad:
                bad.steps.append(i)
                raise
        return items
    raise _Bad(lambda where: "%s (of type %s) is not JSON-serialisable" % (where, type_name(type(obj))))


def freeze(obj: Any) -> Any:
    """Deep read-only copy of decoded JSON: dicts become ``MappingProxyType``, lists become tuples."""
    t = type(obj)
    if t is str or t is int or t is bool or t is float or obj is None:  # decoded JSON's leaves, sooner
        return obj
    if t is dict:
        return types.MappingProxyType({k: freeze(v) for k, v in obj.items()})
    if t is list:
        return tuple([freeze(v) for v in obj])
    if isinstance(obj, dict):
        return types.MappingProxyType({k: freeze(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return tuple(freeze(v) for v in obj)
    return obj


#: The most bytes of files one RuntimeMaterials may hold for the kit to carry it (base64 in one frame of at most
#: 64 MiB, with room for the rest of the reply). Above it the callback's reply is a MaterialTooLarge error that
#: says so, and the material is never encoded (docs/writing-a-provider.md, "Large materials").
MATERIAL_LIMIT = 32 * 1024 * 1024


def _material_sizes(value: Any) -> List[Tuple[int, Any]]:
    """The byte size and name of each file of RuntimeMaterials ``value`` (empty for anything else; never raises)."""
    if not isinstance(value, seams.RuntimeMaterials):
        return []
    try:
        files = value.files
        if not isinstance(files, (tuple, list)):
            return []
        sizes = []
        for item in files:
            content = getattr(item, "content", None)
            if isinstance(content, (bytes, bytearray, memoryview)):
                sizes.append((len(memoryview(content).cast("B")) if isinstance(content, memoryview) else len(content),
                              getattr(item, "name", "?")))
        return sizes
    except BaseException:  # noqa: B036 - a provider object whose attributes raise is reported elsewhere
        return []


def material_larger_than(value: Any, limit: int) -> bool:
    """Whether ``value`` is RuntimeMaterials whose files hold more than ``limit`` bytes (never raises)."""
    return sum(n for n, _ in _material_sizes(value)) > limit


def material_too_large(value: Any) -> Optional[str]:
    """Why RuntimeMaterials ``value`` is too large for the kit to carry, or None."""
    sizes = _material_sizes(value)
    total = sum(n for n, _ in sizes)
    if total <= MATERIAL_LIMIT:
        return None
    n, name = max(sizes, key=lambda s: s[0])
    return ("material of %.1f MiB (largest: %s, %.1f MiB) is above the %d MiB the kit can carry "
            "(docs/writing-a-provider.md, Large materials)"
            % (total / 1048576.0, safe_str(name, 80), n / 1048576.0, MATERIAL_LIMIT // 1048576))


def b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _materials(value: seams.RuntimeMaterials, out: Result, problems: List[str]) -> None:
    """Fill the RuntimeMaterials fields of ``out``. Its ``type_errors`` receive one record per value of the
    wrong type, which the Go side judges (a file whose content is not bytes is never delivered as an empty
    file)."""
    typed: List[ResultTypeError] = []

    def wrong(field: str, expected: str, got: Any) -> None:
        typed.append(ResultTypeError(field, expected, type_name(type(got))))

    files_out: List[MaterialFile] = []
    files = getattr(value, "files", ())
    if not isinstance(files, (tuple, list)):
        problems.append("files is a %s, not a tuple" % type_name(type(files)))
        files = ()
    for i, item in enumerate(files):
        if not isinstance(item, seams.RuntimeFile):
            problems.append("files[%d] is a %s, not a RuntimeFile" % (i, type_name(type(item))))
            wrong("files[%d]" % i, "RuntimeFile", item)
            files_out.append(MaterialFile(None, None))
            continue
        name = item.name
        if not isinstance(name, str):
            problems.append("files[%d].name is a %s, not a str" % (i, type_name(type(name))))
            wrong("files[%d].name" % i, "str", name)
            name = None
        content = item.content
        if isinstance(content, (bytes, bytearray, memoryview)):
            content_b64: Optional[str] = b64(content)
        else:
            problems.append("files[%d].content is a %s, not bytes" % (i, type_name(type(content))))
            wrong("files[%d].content" % i, "bytes", content)
            content_b64 = None
        files_out.append(MaterialFile(name, content_b64))
    env = getattr(value, "environment", None)
    env_out: Optional[Dict[str, str]] = {}
    if isinstance(env, Mapping):
        try:
            for k, v in env.items():
                if not isinstance(k, str):
                    problems.append("environment has a %s key; names must be str" % type_name(type(k)))
                    k = safe_str(k, 200)
                if not isinstance(v, str):
                    problems.append("environment[%r] is a %s, not a str" % (k, type_name(type(v))))
                    wrong("environment[%s]" % safe_str(k, 200), "str", v)
                    v = safe_str(v)
                env_out[k] = v
        except BaseException:  # noqa: B036
            problems.append("environment could not be read")
    else:
        problems.append("environment is a %s, not a mapping" % type_name(type(env)))
        env_out = None
    tvs = getattr(value, "turn_validity_seconds", None)
    if tvs is None or (isinstance(tvs, (int, float)) and not isinstance(tvs, bool)):
        try:
            tvs_out = None if tvs is None else float_value(float(tvs))
        except OverflowError:  # an int beyond any float: as good as infinite, which the Go side judges
            tvs_out = "inf" if tvs > 0 else "-inf"
    else:
        problems.append("turn_validity_seconds is a %s, not a number" % type_name(type(tvs)))
        tvs_out = None
    out.files, out.environment, out.turn_validity_seconds = files_out, env_out, tvs_out
    if typed:
        out.type_errors = typed


def _wire_user_action(message: Any, url: Any, status: Any) -> Dict[str, Any]:
    """A user action with wire-safe types, plus the host validation problems.

    Go decodes ``message``/``status`` as strings and ``url`` as an optional string, so a value of another
    type is sent as an (invalid) placeholder, and ``problems`` says what it really was.
    """
    problems = seams.validate_user_action(message, url, status)
    return {
        "message": truncate(message, MESSAGE_LIMIT) if isinstance(message, str) else "",
        "url": None if url is None else (truncate(url, MESSAGE_LIMIT) if isinstance(url, str)
                                         else "<not a str: %s>" % type_name(type(url))),
        "status": truncate(status, 200) if isinstance(status, str) else "",
        "problems": problems,
    }


def _user_action(obj: Any) -> Dict[str, Any]:
    if not isinstance(obj, Mapping):
        out = _wire_user_action(None, None, None)
        out["problems"] = ["user_action is a %s, not a mapping" % type_name(type(obj))]
        return out
    try:
        extra = jsonsafe(obj)
        out = _wire_user_action(obj.get("message"), obj.get("url"), obj.get("status"))
    except BaseException as exc:  # noqa: B036 - a mapping whose get() raises
        out = _wire_user_action(None, None, None)
        out["problems"] = ["reading user_action raised %s" % type_name(type(exc))]
        return out
    for key, value in extra.items():
        if key not in out:
            out[key] = value
    return out


def _plan_value(value: Any) -> Optional[Dict[str, Any]]:
    """The reply value of a well-formed plan (a bool ``session_bound``, a mapping declaration), exactly as
    :func:`encode_value` makes it through :class:`Result`, without the record; None for any other plan (which
    then takes the general path, problems and all). Every ``plan`` reply is one of these."""
    sb = value.session_bound
    decl = value.declaration
    if type(sb) is not bool or not isinstance(decl, Mapping):
        return None
    try:
        declaration, error = strict_json(decl), None
    except DeclarationError as exc:
        declaration, error = None, truncate(str(exc), MESSAGE_LIMIT)
    except BaseException as exc:  # noqa: B036 - a mapping whose items() raises
        declaration, error = None, "reading the declaration raised %s" % type_name(type(exc))
    return {"type": KIND_PLAN, "repr": safe_repr(value), "session_bound": sb, "declaration": declaration,
            "declaration_error": error}


def encode_value(value: Any, *, method: str) -> Dict[str, Any]:
    """The reply ``value`` for what a callback returned (see protocol.md, "Reply value by result type").

    Type anomalies the Go side should report (a str where bytes belong, ...) are listed in ``problems``.
    """
    if type(value) is seams.RuntimePreparationPlan:
        fast = _plan_value(value)
        if fast is not None:
            return fast
    problems: List[str] = []
    out: Result
    if isinstance(value, bool):
        out = Result(KIND_BOOL, value=value)
    elif value is None:
        out = Result(KIND_NONE)
    elif isinstance(value, seams.RuntimePreparationPlan):
        sb = value.session_bound
        if not isinstance(sb, bool):
            problems.append("session_bound is a %s, not a bool" % type_name(type(sb)))
            try:
                sb = bool(sb)
            except BaseException:  # noqa: B036
                sb = False
        out = Result(KIND_PLAN, session_bound=sb)
        decl = value.declaration
        try:
            if not isinstance(decl, Mapping):
                raise DeclarationError("declaration is a %s, not a mapping" % type_name(type(decl)))
            out.declaration = strict_json(decl)
            out.declaration_error = None
        except DeclarationError as exc:
            out.declaration = None
            out.declaration_error = truncate(str(exc), MESSAGE_LIMIT)
        except BaseException as exc:  # noqa: B036 - a mapping whose items() raises
            out.declaration = None
            out.declaration_error = "reading the declaration raised %s" % type_name(type(exc))
    elif isinstance(value, seams.RuntimeMaterials):
        out = Result(KIND_MATERIALS)
        _materials(value, out, problems)
    elif isinstance(value, seams.SessionUserActionState):
        ready = value.ready
        if not isinstance(ready, bool):
            problems.append("ready is a %s, not a bool" % type_name(type(ready)))
            try:
                ready = bool(ready)
            except BaseException:  # noqa: B036
                ready = False
        ua = value.user_action
        actions_out: List[ActionCommand] = []
        actions = value.actions
        if not isinstance(actions, (tuple, list)):
            problems.append("actions is a %s, not a tuple" % type_name(type(actions)))
            actions = ()
        for i, a in enumerate(actions):
            if isinstance(a, seams.SessionUserActionCommand):
                for attr in ("id", "label"):
                    if not isinstance(getattr(a, attr), str):
                        problems.append("actions[%d].%s is a %s, not a str" % (i, attr, type_name(type(getattr(a, attr)))))
                actions_out.append(ActionCommand(safe_str(a.id, 1024), safe_str(a.label, 1024)))
            else:
                problems.append("actions[%d] is a %s, not a SessionUserActionCommand" % (i, type_name(type(a))))
        out = Result(KIND_USER_ACTION_STATE, ready=ready, user_action=None if ua is None else _user_action(ua),
                     actions=actions_out)
    else:
        out = Result(KIND_OTHER, python_type=type_name(type(value)))
    out.repr = safe_repr(value)
    if problems:
        out.problems = problems
    return out.wire()


def encode_error(
    exc: BaseException,
    *,
    is_provider_file: Callable[[str], bool],
    cancelled: bool = False,
) -> Dict[str, Any]:
    """The reply ``error`` for an exception raised by (or cancelling) a callback."""
    frames: List[Dict[str, Any]] = []
    tb = getattr(exc, "__traceback__", None)
    try:
        while tb is not None:
            code = tb.tb_frame.f_code
            if is_provider_file(code.co_filename):
                frames.append({"file": code.co_filename, "line": tb.tb_lineno or 0, "function": code.co_name})
            tb = tb.tb_next
        if isinstance(exc, SyntaxError) and isinstance(getattr(exc, "filename", None), str):
            if is_provider_file(exc.filename):
                frames.append({"file": exc.filename, "line": exc.lineno or 0, "function": "<module>"})
    except BaseException:  # noqa: B036
        pass
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException as fmt_exc:  # noqa: B036
        text = "<formatting the traceback raised %s>" % type_name(type(fmt_exc))
    out: Dict[str, Any] = {
        "type": type_name(type(exc)),
        "message": safe_str(exc),
        "repr": safe_repr(exc),
        "traceback": truncate_middle(text, TRACEBACK_LIMIT),
        "cancelled": cancelled,
        "frames": frames[-200:],
        "user_action": None,
    }
    if isinstance(exc, seams.PreparationUserActionRequired):
        out["user_action"] = _wire_user_action(
            getattr(exc, "message", None), getattr(exc, "url", None), getattr(exc, "status", None)
        )
    return out


def harness_error(type_: str, message: str) -> Dict[str, Any]:
    """An ``error`` produced by the harness itself (bad arguments, call before load, ...)."""
    return {
        "type": type_,
        "message": message,
        "repr": "%s(%r)" % (type_, message),
        "traceback": "",
        "cancelled": False,
        "frames": [],
        "user_action": None,
    }
