"""Coverage of the provider's own code: which lines (and, on CPython 3.12+, branches) of its files ran.

Only the provider's own files are measured (those the observer classifies as ``provider``: under its package
and code roots, never the standard library, site-packages or the kit), narrowed by the ``include`` and
``omit`` globs of ``load``'s ``coverage`` argument (relative to the project root).

* CPython 3.12+: ``sys.monitoring`` on a free tool id, with ``LINE`` and ``BRANCH`` events turned on for the
  provider's code objects only (no global event): each module of the provider is found as the import
  executes it (the ``exec`` audit event), and with it every function it defines. Each line location is
  disabled after its first hit, each branch once both its directions were seen (3.12 and 3.13 have no
  per-direction events), so steady-state code runs at full speed.
* CPython 3.9-3.11: a global trace function (``sys.settrace`` and ``threading.settrace``) that returns a
  local trace function only for frames of the provider's own code objects.

Lines are attributed to a key: the callback in flight (``plan``, ``prepare_turn``...), ``load`` while the
provider is imported, and after a callback returned still that callback (work it left behind). At the start
of each callback the disabled locations are re-armed (``sys.monitoring.restart_events``), so every reply
carries exactly the lines its callback ran. What a reply carries is described in docs/protocol.md.

Executable lines and branch points come from compiling each measured file once (``co_lines`` of every code
object), so the lines the kit reports as never run are lines the interpreter could have run.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from astrabox._harness.bytecode import _write

_BRANCH_OPS = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
               "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
               "POP_JUMP_BACKWARD_IF_TRUE", "FOR_ITER")
# Tool ids tried in order: ids 3 and 4 have no designated user, so a provider that runs its own debugger,
# coverage tool or profiler (ids 0, 1, 2) is not refused its id.
_TOOL_IDS = (4, 3)
_CO_NEWLOCALS = 0x2


def _code_objects(code: Any) -> List[Any]:
    out = [code]
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            out.extend(_code_objects(c))
    return out


def _line_entries(code: Any) -> List[Tuple[int, int, Optional[int]]]:
    if hasattr(code, "co_lines"):
        return list(code.co_lines())
    import dis  # only when the static facts are not cached: the harness starts without it

    starts = list(dis.findlinestarts(code))  # 3.9
    out = []
    for i, (off, line) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(code.co_code)
        out.append((off, end, line))
    return out


def _code_lines(code: Any, is_module: bool) -> Set[int]:
    """Lines of one code object that a line event can report (a function's own first line, its ``def`` or
    decorator, belongs to the code that defines it, which reports it)."""
    lines = {line for _, _, line in _line_entries(code) if line is not None and line > 0}
    if not is_module:
        lines.discard(code.co_firstlineno)
    return lines


def _branch_points(code: Any) -> List[Tuple[int, int, int]]:
    """``(offset, line, fall-through offset)`` of each conditional jump of one code object that is the
    source's own: the test a ``with`` block makes on an exception's way out is left out."""
    import dis

    out = []
    insts = list(dis.get_instructions(code))
    for i, ins in enumerate(insts):
        if ins.opname not in _BRANCH_OPS or i + 1 >= len(insts):
            continue
        recent = [x.opname for x in insts[max(0, i - 8):i]]
        if "WITH_EXCEPT_START" in recent:
            continue
        line = ins.positions.lineno if getattr(ins, "positions", None) is not None else ins.starts_line
        if not line:
            continue
        out.append((ins.offset, line, insts[i + 1].offset))
    return out


_FACTS_VERSION = 1


def _facts_path(source_path: str) -> str:
    """Where the static facts of a file are cached (``ASTRABOX_PYCACHE``), or "" without a cache."""
    cache = os.environ.get("ASTRABOX_PYCACHE", "")
    if not cache or not os.path.isabs(cache):
        return ""
    return os.path.join(cache, "coverage", sys.implementation.cache_tag or "none",
                        os.path.abspath(source_path).lstrip(os.sep) + ".json")


class FileInfo:
    """The static facts of one measured file: executable lines, branch points and functions. Compiling a file
    and reading its bytecode costs tens of milliseconds on 3.12+, so the facts are cached in the kit's cache
    under the hash of the source (like the provider's bytecode, see bytecode.py): each replica reads them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: List[int] = []
        self.branches: List[int] = []  # the line of each branch point, by index
        self.functions: List[List[Any]] = []  # [qualname, first line, last line] of each function
        self.points: Dict[Tuple[str, int], Dict[int, Tuple[int, int]]] = {}  # code key -> offset -> (index, fall)
        self.error: Optional[str] = None
        try:
            with open(path, "rb") as fh:
                source = fh.read()
        except OSError as exc:
            self.error = "%s: %s" % (type(exc).__name__, exc)
            return
        digest = importlib.util.source_hash(source).hex()
        cached = _facts_path(path)
        if cached and self._read(cached, digest):
            return
        try:
            top = compile(source, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            self.error = "%s: %s" % (type(exc).__name__, exc)
            return
        self._analyse(top)
        if cached:
            points = [[k[0], k[1], off, idx, fall] for k, table in self.points.items() for off, (idx, fall) in table.items()]
            data = {"version": _FACTS_VERSION, "hash": digest, "lines": self.lines, "branches": self.branches,
                    "functions": self.functions, "points": points}
            _write(cached, json.dumps(data).encode())

    def _read(self, cached: str, digest: str) -> bool:
        try:
            with open(cached, "rb") as fh:
                data = json.loads(fh.read())
            if data.get("version") != _FACTS_VERSION or data.get("hash") != digest:
                return False
            self.lines, self.branches, self.functions = data["lines"], data["branches"], data["functions"]
            for qualname, first, off, idx, fall in data["points"]:
                self.points.setdefault((qualname, first), {})[off] = (idx, fall)
            return True
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _analyse(self, top: Any) -> None:
        lines: Set[int] = set()
        for code in _code_objects(top):
            own = _code_lines(code, code is top)
            lines |= own
            if code.co_flags & _CO_NEWLOCALS:  # a function (class bodies and the module are not)
                inner = set()
                for c in _code_objects(code):
                    inner |= _code_lines(c, False)
                self.functions.append([getattr(code, "co_qualname", code.co_name), code.co_firstlineno,
                                       max(inner | {code.co_firstlineno})])
            if sys.version_info >= (3, 12):
                table = self.points.setdefault(_code_key(code), {})
                for off, line, fall in _branch_points(code):
                    table[off] = (len(self.branches), fall)
                    self.branches.append(line)
        self.lines = sorted(lines)

    def wire(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"lines": self.lines, "branches": self.branches, "functions": self.functions}
        if self.error:
            out["error"] = self.error
        return out


def _code_key(code: Any) -> Tuple[str, int]:
    return getattr(code, "co_qualname", code.co_name), code.co_firstlineno


class Coverage:
    """Records the lines and branches of the provider's own files, by key (see the module doc)."""

    def __init__(self, is_provider_file: Callable[[str], bool], quiet: Any) -> None:
        self._is_provider_file = is_provider_file
        self._quiet = quiet
        self.include: List[str] = []
        self.omit: List[str] = []
        self.root = ""
        self.mode = ""
        self.tool = -1
        self.key = "load"
        self._own: Dict[str, bool] = {}
        self._files: Dict[str, FileInfo] = {}
        self._unsent: List[str] = []
        self._lines: Dict[str, Dict[str, Set[int]]] = {}
        self._branches: Dict[str, Dict[str, Set[int]]] = {}
        self._cur_lines: Dict[str, Set[int]] = {}
        self._cur_branches: Dict[str, Set[int]] = {}
        self._code_points: Dict[Any, Any] = {}
        self._armed = False
        self.notes: List[str] = []
        self._noted: Set[str] = set()
        self._global: Any = None
        self._box: List[Any] = [{}]  # the current key's lines by file, for the trace function

    # -- which files ------------------------------------------------------------------------------------

    def own(self, filename: str) -> bool:
        if not filename or filename.startswith("<") or not self._is_provider_file(filename):
            return False
        if not (self.include or self.omit):
            return True
        known = self._own.get(filename)
        if known is None:
            rel = os.path.relpath(filename, self.root) if self.root else filename
            known = not self.include or any(fnmatch.fnmatch(rel, g) for g in self.include)
            known = known and not any(fnmatch.fnmatch(rel, g) for g in self.omit)
            self._own[filename] = known
        return known

    def _file(self, filename: str) -> FileInfo:
        info = self._files.get(filename)
        if info is None:
            with self._quiet():
                info = FileInfo(filename)
            self._files[filename] = info
            self._unsent.append(filename)
        return info

    # -- starting --------------------------------------------------------------------------------------

    def start(self, opts: Any, root: str) -> None:
        """Start measuring, as ``load``'s ``coverage`` argument asks (a dict; anything else leaves it off)."""
        if not isinstance(opts, dict) or not opts.get("enabled"):
            return
        self.include = [g for g in opts.get("include") or [] if isinstance(g, str)]
        self.omit = [g for g in opts.get("omit") or [] if isinstance(g, str)]
        self.root = root if isinstance(root, str) else ""
        self._select(self.key)
        if sys.version_info >= (3, 12) and hasattr(sys, "monitoring"):
            self._start_monitoring()
        else:
            self._start_trace()

    def _note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.notes.append(text)

    def _start_monitoring(self) -> None:
        mon = sys.monitoring
        for tool in _TOOL_IDS:
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "astrabox coverage")
                self.tool = tool
                break
        else:
            self._note("no sys.monitoring tool id was free (3 and 4 are taken): coverage was not measured")
            return
        ev = mon.events
        self._events = ev.LINE | ev.BRANCH
        mon.register_callback(self.tool, ev.LINE, self._on_line)
        mon.register_callback(self.tool, ev.BRANCH, self._on_branch)
        # No global event: only the provider's code objects get events, so re-arming them at each callback
        # (restart_events) leaves every other code object as it was. Module code is found as it is executed
        # (the ``exec`` audit event of every import), and with it every function it defines.
        sys.addaudithook(self._audit)
        self.mode = "monitoring"

    def _audit(self, event: str, args: Any) -> None:
        if event != "exec" or not args:
            return
        code = args[0]
        filename = getattr(code, "co_filename", None)
        if isinstance(filename, str) and hasattr(code, "co_consts") and self.own(filename):
            self._instrument(code)

    def _instrument(self, top: Any) -> None:
        info = self._file(top.co_filename)
        for code in _code_objects(top):
            if code not in self._code_points:
                self._code_points[code] = info.points.get(_code_key(code), {})
                sys.monitoring.set_local_events(self.tool, code, self._events)

    def _on_line(self, code: Any, line: int) -> Any:
        s = self._cur_lines.get(code.co_filename)
        if s is None:
            s = self._cur_lines.setdefault(code.co_filename, set())
        s.add(line)
        self._armed = True
        return sys.monitoring.DISABLE

    def _on_branch(self, code: Any, offset: int, dest: int) -> Any:
        point = self._code_points.get(code, {}).get(offset)
        if point is None:
            return sys.monitoring.DISABLE  # a jump the kit does not count (a ``with`` block's way out)
        index, fall = point
        s = self._cur_branches.get(code.co_filename)
        if s is None:
            s = self._cur_branches.setdefault(code.co_filename, set())
        s.add(index * 2 + (0 if dest == fall else 1))
        self._armed = True
        if index * 2 in s and index * 2 + 1 in s:
            return sys.monitoring.DISABLE
        return None

    def _start_trace(self) -> None:
        """Trace mode: closures rather than methods, and each code object classified once, because the global
        trace function runs at the start of every Python frame of the process."""
        codes: Dict[Any, Any] = {}
        box = self._box

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                d = box[0]
                filename = frame.f_code.co_filename
                s = d.get(filename)
                if s is None:
                    s = d[filename] = set()
                s.add(frame.f_lineno)
            return local

        def classify(code: Any) -> Any:
            own = self.own(code.co_filename)
            if own:
                self._file(code.co_filename)
            codes[code] = local if own else False
            return codes[code]

        get = codes.get

        def global_trace(frame: Any, event: str, arg: Any) -> Any:
            r = get(frame.f_code)
            if r is None:
                r = classify(frame.f_code)
            return r or None

        self._global = global_trace
        sys.settrace(global_trace)
        threading.settrace(global_trace)
        self.mode = "trace"

    # -- keys and replies ------------------------------------------------------------------------------

    def _select(self, key: str) -> None:
        self.key = key
        self._cur_lines = self._lines.setdefault(key, {})
        self._box[0] = self._cur_lines
        self._cur_branches = self._branches.setdefault(key, {})

    def begin(self, method: str) -> None:
        """A callback starts: attribute what runs now to it, every location armed again."""
        if not self.mode:
            return
        self._select(method)
        if self.mode == "monitoring" and self._armed:
            self._armed = False
            sys.monitoring.restart_events()

    def _check_others(self) -> None:
        if self.mode == "monitoring":
            for tool in range(6):
                if tool != self.tool and sys.monitoring.get_tool(tool) is not None:
                    self._note("the provider uses sys.monitoring tool id %d (%s) too; the kit's coverage "
                               "keeps working beside it" % (tool, sys.monitoring.get_tool(tool)))
        elif self.mode == "trace" and sys.gettrace() is not self._global:
            self._note("the provider replaced the trace function (sys.settrace); lines it ran after that "
                       "were not measured")

    def take(self) -> Optional[Dict[str, Any]]:
        """What to attach to a callback's reply: the files measured for the first time, and the lines and
        branches each key ran since the previous reply. ``None`` when coverage is off. Never raises."""
        if not self.mode and not self.notes:
            return None
        try:
            return self._take()
        except Exception as exc:  # a harness bug must not cost the reply
            return {"mode": self.mode, "branches": False, "files": {}, "hits": [],
                    "notes": ["the kit failed to collect coverage: %s: %s" % (type(exc).__name__, exc)]}

    def _take(self) -> Dict[str, Any]:
        self._check_others()
        lines, branches = self._lines, self._branches
        self._lines, self._branches = {}, {}
        self._select(self.key)
        hits = []
        for key in sorted(set(lines) | set(branches)):
            ls = {f: sorted(s) for f, s in lines.get(key, {}).items() if s}
            bs = {f: sorted(s) for f, s in branches.get(key, {}).items() if s}
            if ls or bs:
                hits.append({"key": key, "lines": ls, "branches": bs})
        files = {f: self._files[f].wire() for f in self._unsent}
        self._unsent = []
        out: Dict[str, Any] = {"mode": self.mode, "branches": self.mode == "monitoring", "files": files,
                               "hits": hits}
        if self.notes:
            out["notes"] = self.notes
            self.notes = []
        return out
