package conformance

import (
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/services"

	"fmt"
	"path/filepath"
	"sort"
	"strings"

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
}

func (e *SettingsError) Error() string {
	where := e.File
	if where == "" {
		where = "[tool.astrabox]"
	} else if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	return fmt.Sprintf("%s: [tool.astrabox] %s: %s (see docs/configuration.md)", where, e.Key, e.Msg)
}

// minOpenFiles is the lowest limits.open-files accepted: the harness needs descriptors 0 to 4 before the
// provider opens a module, a socket or a file.
const minOpenFiles = 32

// ParseSettings interprets the raw [tool.astrabox] table.
func ParseSettings(raw map[string]any, file, projectDir string) (*Settings, error) {
	s := &Settings{File: file, ForceDebugLogging: true, Skip: map[string]string{}}
	bad := func(key, format string, args ...any) error {
		if key == "" || strings.HasSuffix(key, ".") {
			key += `""` // an empty TOML key, written "" = ...
		}
		return &SettingsError{File: file, Line: settingsLine(file, key), Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		switch k {
		case "python-path":
			list, ok := stringList(v)
			if !ok {
				return nil, bad(k, "must be a list of directories relative to the project")
			}
			for _, p := range list {
				if !filepath.IsAbs(p) {
					p = filepath.Join(projectDir, p)
				}
				s.PythonPath = append(s.PythonPath, filepath.Clean(p))
			}
		case "secret-fields":
			list, ok := stringList(v)
			if !ok {
				return nil, bad(k, "must be a list of dotted configuration paths such as \"deployment.client_secret\"")
			}
			s.SecretFields = list
		case "config":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, bad(k, "must be a table (the Agent configuration fixture)")
			}
			if sec, has := m["secrets"]; has {
				if _, ok := sec.(map[string]any); !ok {
					return nil, bad(k+".secrets", "is %s, but it must be a table of secret field names, such as { model_api_key = \"\" }: the kit plants a canary in each field, and without them no LEAK-* check has a secret to hunt", tomlKind(sec))
				}
			}
			s.Config = m
		case "engine":
			e, ok := v.(string)
			if !ok || !contains(simulate.AdapterNames(), e) {
				return nil, bad(k, "must be one of %s", strings.Join(simulate.AdapterNames(), ", "))
			}
			s.Engine = e
		case "replicas":
			n, ok := v.(int64)
			if !ok || n < 2 || n > 8 {
				return nil, bad(k, "must be a whole number from 2 to 8")
			}
			s.Replicas = int(n)
		case "seed":
			n, ok := v.(int64)
			if !ok {
				return nil, bad(k, "is %s, but it must be a whole number from -9223372036854775808 to 9223372036854775807, such as 1", tomlKind(v))
			}
			s.Seed = &n
		case "force-debug-logging":
			b, ok := v.(bool)
			if !ok {
				return nil, bad(k, "must be true or false")
			}
			s.ForceDebugLogging = b
		case "coverage":
			b, ok := v.(bool)
			if !ok {
				return nil, bad(k, "must be true or false")
			}
			s.Coverage = &b
		case "coverage-include", "coverage-omit":
			list, ok := stringList(v)
			if !ok {
				return nil, bad(k, "must be a list of file globs relative to the project, such as \"src/*/vendored/*\"")
			}
			if k == "coverage-include" {
				s.CoverageInclude = list
			} else {
				s.CoverageOmit = list
			}
		case "deadlines":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, bad(k, "must be a table such as { turn = 5, session = 10 }")
			}
			for _, dk := range sortedAnyKeys(m) {
				f, ok := number(m[dk])
				if !ok {
					return nil, bad(k+"."+dk, "is %s, but it must be a positive number of seconds", tomlKind(m[dk]))
				}
				if err := simulate.CheckSeconds(f); err != nil {
					return nil, bad(k+"."+dk, "%v", err)
				}
				switch dk {
				case "plan":
					s.Deadlines.Plan = f
				case "synchronize":
					s.Deadlines.Synchronize = f
				case "recover":
					s.Deadlines.Recover = f
				case "session":
					s.Deadlines.Session = f
				case "turn":
					s.Deadlines.Turn = f
				case "user-action":
					s.Deadlines.UserAction = f
				default:
					return nil, bad(k+"."+dk, "unknown deadline; use plan, synchronize, recover, session, turn or user-action")
				}
			}
		case "services":
			specs, err := services.Parse(v, file, projectDir)
			if err != nil {
				return nil, err
			}
			s.Services = specs
		case "egress":
			str, _ := v.(string)
			switch egress.Policy(str) {
			case egress.PolicyRefuse, egress.PolicyAllow:
				s.Egress = egress.Policy(str)
			default:
				return nil, bad(k, "must be \"refuse\" (the default: undeclared destinations are refused and reported) or \"allow\"")
			}
		case "settle":
			f, ok := number(v)
			if !ok || !(f > 0 && f <= maxSettleS) {
				return nil, bad(k, "must be a number of seconds greater than 0 and at most %d", maxSettleS)
			}
			s.SettleS = f
		case "skip":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, bad(k, "must be a table mapping check IDs to reasons, such as { SYNC-SKIP-UNCHANGED = \"why\" }")
			}
			for _, id := range sortedAnyKeys(m) {
				r, ok := m[id].(string)
				if !ok || strings.TrimSpace(r) == "" {
					return nil, bad(k+"."+id, "needs a reason (a non-empty string)")
				}
				c, found := Lookup(id)
				if !found {
					msg := "is not a check ID"
					if sug := Suggest(id); len(sug) > 0 {
						msg += "; did you mean " + strings.Join(sug, ", ") + "?"
					}
					return nil, bad(k+"."+id, "%s", msg)
				}
				s.Skip[c.ID] = r
			}
		case "limits":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, bad(k, "must be a table such as { memory-mb = 1024 }")
			}
			for _, lk := range sortedAnyKeys(m) {
				n, ok := m[lk].(int64)
				if !ok || n <= 0 {
					return nil, bad(k+"."+lk, "must be a positive whole number")
				}
				if lk == "open-files" && n < minOpenFiles {
					return nil, bad(k+"."+lk, "is %d, too few for a Python process to start: the harness itself needs descriptors 0 to 4 and the interpreter more; use at least %d (the default is 1024)", n, minOpenFiles)
				}
				switch lk {
				case "memory-mb":
					s.MemoryMB = int(n)
				case "address-space-mb":
					s.AddressSpaceMB = int(n)
				case "open-files":
					s.OpenFiles = int(n)
				default:
					return nil, bad(k+"."+lk, "unknown limit; use memory-mb, address-space-mb or open-files")
				}
			}
		default:
			return nil, bad(k, "unknown setting; valid settings are python-path, secret-fields, config, engine, replicas, seed, deadlines, settle, skip, force-debug-logging, limits, coverage, coverage-include, coverage-omit")
		}
	}
	return s, nil
}

func sortedAnyKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
