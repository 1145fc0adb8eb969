package discovery

import (
	"fmt"
	"strings"
)

// Python exception types that mean an import failed.
const (
	PyModuleNotFoundError = "ModuleNotFoundError"
	PyImportError         = "ImportError"
)

// LoadContext is what the kit knows when the provider failed to load: enough to tell the user where it
// looked and what to do next.
type LoadContext struct {
	// Project is the project read; Python the interpreter used; Chosen the declaration loaded.
	Project *Project
	Python  *Interpreter
	Chosen  Declaration
	// Paths are the directories put in front of sys.path (code roots, then python-path entries).
	Paths []string
	// ErrorType is the Python exception type of the failure (e.g. ModuleNotFoundError).
	ErrorType string
}

// LoadAdvice returns the lines that explain a failed load: the interpreter and the sys.path used, the
// project's code roots, whether the provider's module is in them, and what to do (set python-path, or
// install the project or its dependencies into that interpreter).
func LoadAdvice(c LoadContext) (out []string) {
	if c.Python != nil {
		out = append(out, fmt.Sprintf("interpreter: %s (Python %s, chosen by %s)", c.Python.Path, c.Python.VersionString(), c.Python.Reason))
	}
	paths := "(none)"
	if len(c.Paths) > 0 {
		paths = strings.Join(c.Paths, ", ")
	}
	out = append(out, "sys.path: "+paths+", then the interpreter's standard library and site-packages")
	if c.Project == nil {
		return out
	}
	p := c.Project
	out = append(out, fmt.Sprintf("code roots found: %s (%s)", strings.Join(p.CodeRoots, ", "), p.CodeRootsReason))
	if c.ErrorType != PyModuleNotFoundError && c.ErrorType != PyImportError {
		return out
	}
	python := "python"
	if c.Python != nil {
		python = c.Python.Path
	}
	install := fmt.Sprintf("%s -m pip install -e %s", python, p.Dir)
	defer func() { out = append(out, InterpreterAdvice(c.Python)...) }()
	mod := c.Chosen.Ref.Module
	if file, _, ok := p.FindModule(mod); ok {
		out = append(out, fmt.Sprintf("the provider's module %s is in the project (%s), so something it imports is missing from the interpreter;"+
			" install the project with its dependencies into it: %s", mod, file, install))
		return out
	}
	switch {
	case c.Chosen.Origin == OriginInstalled:
		out = append(out, fmt.Sprintf("the provider's module %s is not in the project's code roots, and the installed distribution %s"+
			" that declares it does not provide it to this interpreter; reinstall it (%s -m pip install --force-reinstall %s)",
			mod, c.Chosen.Distribution, python, c.Chosen.Distribution))
	default:
		out = append(out, fmt.Sprintf("the provider's module %s is in none of the code roots; if it lives elsewhere in the project,"+
			" add that directory to [tool.astrabox] python-path (e.g. python-path = [\"lib\"]), or install the project: %s", mod, install))
	}
	return out
}

// InheritedChoice names the part of the interpreter choice the kit inherited from its environment rather
// than from the project: PYENV_VERSION (which `pyenv shell`, or a pyenv shim that started astrabox, sets)
// when the interpreter was held to it; "" otherwise.
func (i *Interpreter) InheritedChoice() string {
	if i == nil || i.Pin == nil || i.Pin.File != "" || !strings.HasPrefix(i.Pin.Source, "PYENV_VERSION=") {
		return ""
	}
	if !strings.Contains(i.Rule, i.Pin.Source) {
		return ""
	}
	return i.Pin.Source
}

// PinHint is how to run a project's provider with another interpreter: the python setting of
// [tool.astrabox] (or --python for one run).
const PinHint = "to use another interpreter (one with the provider's libraries installed), pin it for the project in [tool.astrabox]: python = \"/path/to/python\" (or pass --python for one run)"

// InterpreterAdvice returns the lines that say which interpreter loaded the provider and why, and how to pin
// another: for a load that failed because a library is missing from that interpreter.
func InterpreterAdvice(in *Interpreter) []string {
	if in == nil {
		return []string{PinHint}
	}
	var out []string
	if in.Via != "" {
		out = append(out, fmt.Sprintf("%s was found through the launcher %s, which chose it", in.Path, in.Via))
	}
	if inh := in.InheritedChoice(); inh != "" {
		out = append(out, fmt.Sprintf("%s came from the environment astrabox was started in (pyenv shell, or a pyenv shim that started astrabox, sets it), not from the project; it overrides the project's .python-version: unset it, or pin the interpreter", inh))
	}
	return append(out, PinHint)
}
