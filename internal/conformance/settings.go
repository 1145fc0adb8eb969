package conformance

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/seconds"
	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Settings are a project's own conformance settings, read from `[tool.astrabox]` in pyproject.toml or from
// astrabox.toml. Every field is optional; docs/configuration.md documents each.
type Settings struct {
	// File is where the settings came from ("" when none).
	File string
	// PythonPath are extra code roots (relative to the project) put on sys.path.
	PythonPath []string
	// SecretFields are dotted paths into the Agent configuration that hold secrets; the kit plants a canary
	// in each (in addition to every field under `secrets`).
	SecretFields []string
	// Config is deep-merged over the default Agent configuration.
	Config map[string]any
	// Engine is the engine adapter scenarios use.
	Engine string
	// Replicas is the number of replicas of each default scenario (at least 2).
	Replicas int
	// Seed is the default seed.
	Seed *int64
	// Deadlines override the callback deadlines, in seconds.
	Deadlines simulate.Deadlines
	// Skip maps check IDs to the reason they are skipped; the report shows the reason.
	Skip map[string]string
	// ForceDebugLogging makes debug records visible to the secret scan (default true).
	ForceDebugLogging bool
	// LogLevel is the deployment's logging level (a Python level number; default LogLevelInfo): a secret or
	// trusted configuration value in a record at or above it fails LEAK-LOG or SYNC-NO-LOG-CONFIG, one in a
	// record below it is a warning that names the logger and the line that quiets it.
	LogLevel int
	// Python is the interpreter the project pins ("python" key; "" when none), relative paths resolved
	// against the project, and PythonLine the line that sets it.
	Python     string
	PythonLine int
	// MemoryMB, AddressSpaceMB and OpenFiles bound each replica process (0 keeps the defaults).
	MemoryMB, AddressSpaceMB, OpenFiles int
	// SettleS bounds, in seconds, the wait for work a callback left running (0 keeps
	// simulate.DefaultSettle).
	SettleS float64
	// Services are the provider's declared external systems ([tool.astrabox.services.NAME], docs/services.md).
	Services []services.Spec
	// Egress says what happens to connections to undeclared destinations (default: refused and reported).
	Egress egress.Policy
	// Coverage turns coverage of the provider's own code off (false) or on (nil or true); CoverageInclude
	// and CoverageOmit narrow the measured files (globs relative to the project).
	Coverage                      *bool
	CoverageInclude, CoverageOmit []string
	// ImageWrapper is the absolute path of the project's image CLI wrapper script ("" when none is named);
	// a run checks it for SESSION-CLI-PROBE as `astrabox image check-wrapper` does.
	ImageWrapper string
	// ImageWrapperRealCLI is the path at which that wrapper runs the real CLI when it hard-codes it
	// (image-wrapper-real-cli); the run then checks the wrapper unchanged against it, as
	// `image check-wrapper --real-cli` does. "" when none is named.
	ImageWrapperRealCLI string
}

// maxSettleS is the largest settle time accepted: the wait is paid after every callback that leaves work.
const maxSettleS = 60

// SettingsError is a problem in the project's settings.
type SettingsError struct {
	File string
	// Line is the line the key is written on (0 when it could not be found).
	Line int
	Key  string
	Msg  string
	// Doc is the page that documents the key (docs/configuration.md when empty).
	Doc string
}

func (e *SettingsError) Error() string {
	where := e.File
	if where == "" {
		where = "[tool.astrabox]"
	} else if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	doc := e.Doc
	if doc == "" {
		doc = "docs/configuration.md"
	}
	return fmt.Sprintf("%s: [tool.astrabox] %s: %s (see %s)", where, e.Key, e.Msg, doc)
}

// minOpenFiles is the lowest limits.open-files accepted: the harness needs descriptors 0 to 4 before the
// provider opens a module, a socket or a file.
const minOpenFiles = 32

// badFunc records a problem with a settings key; the message is a format and its arguments.
type badFunc func(key, format string, args ...any)

// settingParser interprets one top-level settings key's value into s, reporting each problem through bad.
type settingParser func(s *Settings, key string, v any, dir string, bad badFunc)

// settingKeys is every top-level settings key and its parser; docs/configuration.md documents each.
var settingKeys = map[string]settingParser{
	"python-path":            parsePythonPath,
	"secret-fields":          parseSecretFields,
	"config":                 parseConfig,
	"engine":                 parseEngine,
	"replicas":               parseReplicas,
	"seed":                   parseSeed,
	"force-debug-logging":    parseForceDebugLogging,
	"coverage":               parseCoverage,
	"coverage-include":       parseCoverageGlobs,
	"coverage-omit":          parseCoverageGlobs,
	"deadlines":              parseDeadlines,
	"settle":                 parseSettle,
	"skip":                   parseSkip,
	"limits":                 parseLimits,
	"egress":                 parseEgress,
	"image-wrapper":          parseImageWrapper,
	"image-wrapper-real-cli": parseImageWrapperRealCLI,
	"log-level":              parseLogLevel,
	"python":                 parsePython,
	// "services" is parsed by parseServices, which reports services.Error values as settings errors.
}

// deadlineKeys and limitKeys are the keys of the deadlines and limits tables.
var (
	deadlineKeys = []string{"plan", "synchronize", "recover", "session", "turn", "user-action"}
	limitKeys    = []string{"memory-mb", "address-space-mb", "open-files"}
)

// ParseSettings interprets the raw [tool.astrabox] table. It reports every problem at once: the error is
// an errors.Join of *SettingsError values, in the order of their lines, each naming its file and line.
func ParseSettings(raw map[string]any, file, projectDir string) (*Settings, error) {
	s := &Settings{File: file, ForceDebugLogging: true, LogLevel: LogLevelInfo, Skip: map[string]string{}}
	var errs []*SettingsError
	bad := func(key, format string, args ...any) {
		if key == "" || strings.HasSuffix(key, ".") {
			key += `""` // an empty TOML key, written "" = ...
		}
		errs = append(errs, &SettingsError{File: file, Line: discovery.SettingsLine(file, key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, k := range sortedAnyKeys(raw) {
		if k == "services" {
			errs = append(errs, parseServices(s, raw[k], file, projectDir)...)
			continue
		}
		parse, ok := settingKeys[k]
		if !ok {
			bad(k, "%s", unknownMessage("unknown setting", k, topLevelKeys()))
			continue
		}
		parse(s, k, raw[k], projectDir, bad)
	}
	if s.ImageWrapperRealCLI != "" && s.ImageWrapper == "" {
		bad("image-wrapper-real-cli", "names the real CLI of an image wrapper, but image-wrapper names no wrapper: add image-wrapper = \"PATH\" or remove it")
	}
	if len(errs) == 0 {
		return s, nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return nil, errors.Join(out...)
}

// topLevelKeys lists every top-level settings key, sorted.
func topLevelKeys() []string {
	keys := append(slices.Collect(maps.Keys(settingKeys)), "services")
	sort.Strings(keys)
	return keys
}

// unknownMessage says that key is not one of valid: the closest valid keys by edit distance first ("did you
// mean"), then the whole list.
func unknownMessage(what, key string, valid []string) string {
	msg := what
	if sug := suggestKeys(key, valid); len(sug) > 0 {
		msg += "; did you mean " + strings.Join(quoteAll(sug), " or ") + "?"
	}
	return msg + "; valid keys are " + strings.Join(valid, ", ")
}

// suggestKeys returns the valid keys within edit distance 2 of key (or 3 for keys of 8 characters or more),
// or that start with it, closest first, at most three.
func suggestKeys(key string, valid []string) []string {
	type cand struct {
		k string
		d int
	}
	var cs []cand
	limit := 2
	if len(key) >= 8 {
		limit = 3
	}
	for _, v := range valid {
		d := levenshtein(strings.ToLower(key), v)
		if d <= limit || (len(key) >= 3 && strings.HasPrefix(v, strings.ToLower(key))) {
			cs = append(cs, cand{v, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].d < cs[j].d || (cs[i].d == cs[j].d && cs[i].k < cs[j].k) })
	var out []string
	for i, c := range cs {
		if i == 3 {
			break
		}
		out = append(out, c.k)
	}
	return out
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = `"` + s + `"`
	}
	return out
}

// parseServices reads the services table and turns each service declaration problem into a settings error
// at its line.
func parseServices(s *Settings, v any, file, dir string) []*SettingsError {
	specs, err := services.Parse(v, file, dir, func(key string) int { return discovery.SettingsLine(file, key) })
	if err == nil {
		s.Services = specs
		return nil
	}
	var out []*SettingsError
	for _, e := range services.Errors(err) {
		out = append(out, &SettingsError{File: file, Line: e.Line, Key: e.KeyPath(), Msg: e.Msg, Doc: "docs/services.md"})
	}
	return out
}

func parsePythonPath(s *Settings, k string, v any, dir string, bad badFunc) {
	list, ok := stringList(v)
	if !ok {
		bad(k, "must be a list of directories relative to the project")
		return
	}
	for _, p := range list {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		s.PythonPath = append(s.PythonPath, filepath.Clean(p))
	}
}

func parseSecretFields(s *Settings, k string, v any, _ string, bad badFunc) {
	list, ok := stringList(v)
	if !ok {
		bad(k, "must be a list of dotted configuration paths such as \"deployment.client_secret\"")
		return
	}
	s.SecretFields = list
}

func parseConfig(s *Settings, k string, v any, _ string, bad badFunc) {
	m, ok := v.(map[string]any)
	if !ok {
		bad(k, "must be a table (the Agent configuration fixture)")
		return
	}
	if sec, has := m["secrets"]; has {
		if _, ok := sec.(map[string]any); !ok {
			bad(k+".secrets", "is %s, but it must be a table of secret field names, such as { model_api_key = \"\" }: the kit plants a canary in each field, and without them no LEAK-* check has a secret to hunt", secretKind(sec))
			return
		}
	}
	s.Config = m
}

func parseEngine(s *Settings, k string, v any, _ string, bad badFunc) {
	e, ok := v.(string)
	if !ok || !slices.Contains(simulate.AdapterNames(), e) {
		bad(k, "must be one of %s", strings.Join(simulate.AdapterNames(), ", "))
		return
	}
	s.Engine = e
}

func parseReplicas(s *Settings, k string, v any, _ string, bad badFunc) {
	n, ok := v.(int64)
	if !ok || n < 2 || n > 8 {
		bad(k, "must be a whole number from 2 to 8")
		return
	}
	s.Replicas = int(n)
}

func parseSeed(s *Settings, k string, v any, _ string, bad badFunc) {
	n, ok := v.(int64)
	if !ok {
		bad(k, "is %s, but it must be a whole number from -9223372036854775808 to 9223372036854775807, such as 1", tomlKind(v))
		return
	}
	s.Seed = &n
}

func parseForceDebugLogging(s *Settings, k string, v any, _ string, bad badFunc) {
	b, ok := v.(bool)
	if !ok {
		bad(k, "must be true or false")
		return
	}
	s.ForceDebugLogging = b
}

// Python's logging levels, by the names the log-level setting takes.
const (
	LogLevelDebug    = 10
	LogLevelInfo     = 20
	LogLevelWarning  = 30
	LogLevelError    = 40
	LogLevelCritical = 50
)

// logLevelNames are the names log-level accepts, in order.
var logLevelNames = []struct {
	name  string
	level int
}{{"DEBUG", LogLevelDebug}, {"INFO", LogLevelInfo}, {"WARNING", LogLevelWarning}, {"ERROR", LogLevelError}, {"CRITICAL", LogLevelCritical}}

// LogLevelName is a level's name ("INFO"), or "level N" for a number between the names.
func LogLevelName(level int) string {
	for _, n := range logLevelNames {
		if n.level == level {
			return n.name
		}
	}
	return fmt.Sprintf("level %d", level)
}

func parseLogLevel(s *Settings, k string, v any, _ string, bad badFunc) {
	const want = "must be a logging level: \"DEBUG\", \"INFO\", \"WARNING\", \"ERROR\", \"CRITICAL\" or a number from 1 to 50 (the level your deployment runs the provider at)"
	switch t := v.(type) {
	case string:
		for _, n := range logLevelNames {
			if strings.EqualFold(strings.TrimSpace(t), n.name) {
				s.LogLevel = n.level
				return
			}
		}
		bad(k, want)
	case int64:
		if t < 1 || t > 50 {
			bad(k, want)
			return
		}
		s.LogLevel = int(t)
	default:
		bad(k, want)
	}
}

func parsePython(s *Settings, k string, v any, dir string, bad badFunc) {
	p, ok := v.(string)
	if !ok || strings.TrimSpace(p) == "" {
		bad(k, "must be the path of a Python 3.9+ interpreter (relative to the project, such as \".venv-clients/bin/python\") or a command on PATH, such as \"python3.12\"")
		return
	}
	if strings.ContainsRune(p, filepath.Separator) && !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	s.Python = p
	if s.File != "" {
		s.PythonLine = discovery.SettingsLine(s.File, k)
	}
}

func parseCoverage(s *Settings, k string, v any, _ string, bad badFunc) {
	b, ok := v.(bool)
	if !ok {
		bad(k, "must be true or false")
		return
	}
	s.Coverage = &b
}

func parseCoverageGlobs(s *Settings, k string, v any, _ string, bad badFunc) {
	list, ok := stringList(v)
	if !ok {
		bad(k, "must be a list of file globs relative to the project, such as \"src/*/vendored/*\"")
		return
	}
	if k == "coverage-include" {
		s.CoverageInclude = list
	} else {
		s.CoverageOmit = list
	}
}

func parseDeadlines(s *Settings, k string, v any, _ string, bad badFunc) {
	m, ok := v.(map[string]any)
	if !ok {
		bad(k, "must be a table such as { turn = 5, session = 10 }")
		return
	}
	fields := map[string]*float64{
		"plan": &s.Deadlines.Plan, "synchronize": &s.Deadlines.Synchronize, "recover": &s.Deadlines.Recover,
		"session": &s.Deadlines.Session, "turn": &s.Deadlines.Turn, "user-action": &s.Deadlines.UserAction,
	}
	for _, dk := range sortedAnyKeys(m) {
		field, known := fields[dk]
		if !known {
			bad(k+"."+dk, "%s", unknownMessage("unknown deadline", dk, deadlineKeys))
			continue
		}
		f, ok := number(m[dk])
		if !ok {
			bad(k+"."+dk, "is %s, but it must be a positive number of seconds", tomlKind(m[dk]))
			continue
		}
		if err := simulate.CheckSeconds(f); err != nil {
			bad(k+"."+dk, "%v", err)
			continue
		}
		*field = f
	}
}

func parseSettle(s *Settings, k string, v any, _ string, bad badFunc) {
	f, ok := number(v)
	if !ok || !(f > 0 && f <= maxSettleS) {
		bad(k, "must be a number of seconds greater than 0 and at most %d", maxSettleS)
		return
	}
	if err := seconds.Check(f); err != nil {
		bad(k, "%v", err)
		return
	}
	s.SettleS = f
}

func parseSkip(s *Settings, k string, v any, _ string, bad badFunc) {
	m, ok := v.(map[string]any)
	if !ok {
		bad(k, "must be a table mapping check IDs to reasons, such as { SYNC-SKIP-UNCHANGED = \"why\" }")
		return
	}
	for _, id := range sortedAnyKeys(m) {
		r, ok := m[id].(string)
		if !ok || strings.TrimSpace(r) == "" {
			bad(k+"."+id, "needs a reason (a non-empty string)")
			continue
		}
		c, found := Lookup(id)
		if !found {
			msg := "is not a check ID"
			if sug := Suggest(id); len(sug) > 0 {
				msg += "; did you mean " + strings.Join(sug, ", ") + "?"
			}
			bad(k+"."+id, "%s", msg)
			continue
		}
		s.Skip[c.ID] = r
	}
}

func parseLimits(s *Settings, k string, v any, _ string, bad badFunc) {
	m, ok := v.(map[string]any)
	if !ok {
		bad(k, "must be a table such as { memory-mb = 1024 }")
		return
	}
	fields := map[string]*int{"memory-mb": &s.MemoryMB, "address-space-mb": &s.AddressSpaceMB, "open-files": &s.OpenFiles}
	for _, lk := range sortedAnyKeys(m) {
		field, known := fields[lk]
		n, ok := m[lk].(int64)
		switch {
		case !known:
			bad(k+"."+lk, "%s", unknownMessage("unknown limit", lk, limitKeys))
		case !ok || n <= 0:
			bad(k+"."+lk, "must be a positive whole number")
		case lk == "open-files" && n < minOpenFiles:
			bad(k+"."+lk, "is %d, too few for a Python process to start: the harness itself needs descriptors 0 to 4 and the interpreter more; use at least %d (the default is 1024)", n, minOpenFiles)
		default:
			*field = int(n)
		}
	}
}

func parseEgress(s *Settings, k string, v any, _ string, bad badFunc) {
	str, _ := v.(string)
	switch egress.Policy(str) {
	case egress.PolicyRefuse, egress.PolicyAllow:
		s.Egress = egress.Policy(str)
	default:
		bad(k, "must be \"refuse\" (the default: undeclared destinations are refused and reported) or \"allow\"")
	}
}

// parseImageWrapper reads image-wrapper: the project's image CLI wrapper script, relative to the project. It
// must be a regular file; whether it runs and passes the probes is SESSION-CLI-PROBE's to say.
func parseImageWrapper(s *Settings, k string, v any, dir string, bad badFunc) {
	str, ok := v.(string)
	if !ok || strings.TrimSpace(str) == "" {
		bad(k, "must be the path of the image's CLI wrapper script, relative to the project, such as \"image/claude-wrapper\"")
		return
	}
	if !filepath.IsAbs(str) {
		str = filepath.Join(dir, str)
	}
	if st, err := os.Stat(str); err != nil || !st.Mode().IsRegular() {
		bad(k, "names %s, which is not a file: give the path of the image's CLI wrapper script, relative to the project", str)
		return
	}
	s.ImageWrapper = filepath.Clean(str)
}

// parseImageWrapperRealCLI reads image-wrapper-real-cli: the real CLI the image wrapper runs by a fixed
// path, absolute as the wrapper writes it (or relative to the project). Whether it runs is for the check.
func parseImageWrapperRealCLI(s *Settings, k string, v any, dir string, bad badFunc) {
	str, ok := v.(string)
	if !ok || strings.TrimSpace(str) == "" {
		bad(k, "must be the path at which the image wrapper runs the real CLI, such as \"/opt/claude/bin/claude\"")
		return
	}
	if !filepath.IsAbs(str) {
		str = filepath.Join(dir, str)
	}
	s.ImageWrapperRealCLI = filepath.Clean(str)
}

func sortedAnyKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// secretKind names the kind of a decoded TOML value that may be a secret, without its value.
func secretKind(v any) string {
	switch v.(type) {
	case string:
		return "a text"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return tomlKind(v) // a list, a table or another type: no value in the words
}

// tomlKind names the kind of a decoded TOML value, for messages.
func tomlKind(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("the text %q", t)
	case int64:
		return fmt.Sprintf("the whole number %d", t)
	case float64:
		return fmt.Sprintf("the number %g (not a whole number, or too large for one)", t)
	case bool:
		return fmt.Sprintf("%t", t)
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok || s == "" {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
