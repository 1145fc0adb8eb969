package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// UndecidedSchema identifies the JSON document of a run that could not decide (exit status 2), documented in
// docs/report-format.md.
const UndecidedSchema = "astrabox.undecided/v1"

// Undecided is why a run could not decide (exit status 2): the command, the error text (already masked and
// sanitised) and, when the provider did not load, the interpreter that tried.
type Undecided struct {
	Command string
	Message string
	// Interpreter is the interpreter the provider was loaded with, nil when the run stopped before choosing
	// one or for another reason than a failed load.
	Interpreter *Interpreter
}

// Interpreter is the Python interpreter of a run, as an undecided run's documents name it.
type Interpreter struct {
	// Path is the interpreter; Version its version ("3.11.2").
	Path    string `json:"path"`
	Version string `json:"version"`
	// ChosenBy says which rule chose it ("python3 on PATH, Python 3.11 pinned by PYENV_VERSION=3.11.9").
	ChosenBy string `json:"chosen_by"`
	// Via is the launcher (a pyenv or asdf shim) it was found through ("" when none).
	Via string `json:"via,omitempty"`
	// Inherited names an interpreter choice the kit inherited from its environment rather than the
	// project ("PYENV_VERSION=3.11.9"; "" when none).
	Inherited string `json:"inherited,omitempty"`
	// PinWith is how to pin another interpreter for the project.
	PinWith string `json:"pin_with"`
}

type undecidedDoc struct {
	Schema      string       `json:"schema"`
	Command     string       `json:"command"`
	ExitStatus  int          `json:"exit_status"`
	Error       string       `json:"error"`
	Interpreter *Interpreter `json:"interpreter,omitempty"`
}

// RenderError writes the JSON document of a run that could not decide.
func (JSON) RenderError(w io.Writer, u Undecided) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(undecidedDoc{Schema: UndecidedSchema, Command: u.Command, ExitStatus: 2, Error: u.Message, Interpreter: u.Interpreter}); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ExitCode                   int                 `json:"exitCode"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level   string    `json:"level"`
	Message sarifText `json:"message"`
}

type sarifErrorRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations"`
	Results     []sarifResult     `json:"results"`
	Properties  map[string]any    `json:"properties,omitempty"`
}

// RenderError writes the SARIF log of a run that could not decide: no result, and one invocation that did
// not succeed, with the error as its notification (where code-scanning tools show a failed analysis).
func (s SARIF) RenderError(w io.Writer, version string, u Undecided) error {
	run := sarifErrorRun{
		Tool: sarifTool{Driver: sarifDriver{Name: "astrabox", Version: version, InformationURI: InformationURI, Rules: []sarifRule{}}},
		Invocations: []sarifInvocation{{ExitCode: 2,
			ToolExecutionNotifications: []sarifNotification{{Level: "error", Message: sarifText{Text: u.Message}}}}},
		Results: []sarifResult{},
	}
	if u.Interpreter != nil {
		run.Properties = map[string]any{"interpreter": u.Interpreter}
	}
	doc := struct {
		Schema  string          `json:"$schema"`
		Version string          `json:"version"`
		Runs    []sarifErrorRun `json:"runs"`
	}{SARIFSchema, SARIFVersion, []sarifErrorRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render sarif: %w", err)
	}
	return nil
}
