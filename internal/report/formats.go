package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// Format names an output format of a report.
type Format string

// The output formats, in the order the docs list them.
const (
	FormatText    Format = "text"
	FormatJSON    Format = "json"
	FormatJUnit   Format = "junit"
	FormatSARIF   Format = "sarif"
	FormatGitHub  Format = "github"
	FormatGitLab  Format = "gitlab"
	FormatConcise Format = "concise"
)

// formatOrder is every format, in the order the docs and help list them.
var formatOrder = []Format{FormatText, FormatJSON, FormatJUnit, FormatSARIF, FormatGitHub, FormatGitLab, FormatConcise}

// FormatSet is the formats one command accepts on --format, in the order its help lists them. Every
// command's --format is validated by the Parse of its set: Reports for the commands that render a report,
// TextOrJSON for those that print text or JSON.
type FormatSet []Format

// Reports is every report format (conformance run, report merge).
var Reports = FormatSet(formatOrder)

// TextOrJSON is the formats of the commands that print text or JSON rather than a report (providers,
// version, conformance list, simulate, image check-wrapper).
var TextOrJSON = FormatSet{FormatText, FormatJSON}

// Names returns the names of the set's formats, in order.
func (s FormatSet) Names() []string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = string(f)
	}
	return out
}

// Parse returns the format of the set a name denotes, ignoring case and surrounding space; an unknown name
// is an error that lists the set's names.
func (s FormatSet) Parse(name string) (Format, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	for _, f := range s {
		if string(f) == want {
			return f, nil
		}
	}
	// The two wordings are those docs/troubleshooting.md lists: a long set "use one of", a pair "use a or b".
	names := s.Names()
	if len(names) > 2 {
		return "", fmt.Errorf("unknown output format %q: use one of %s", name, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("unknown format %q; use %s", name, strings.Join(names, " or "))
}

// Formats returns the names of every report format, in the order the docs list them.
func Formats() []string { return Reports.Names() }

// ParseFormat returns the report format a name denotes (Reports.Parse).
func ParseFormat(name string) (Format, error) { return Reports.Parse(name) }

// Options are what renderers need beyond the report: the text format's styles and width, and where paths
// of the other formats are relative to.
type Options struct {
	// Styles and Width only matter to the text format; Width is the number of columns to wrap to
	// (DefaultWidth when not positive).
	Styles term.Styles
	Width  int
	// Root is the directory paths are relative to in JUnit, SARIF, GitHub, GitLab and concise output (the
	// repository root); empty means the report's project directory.
	Root string
	// Manifest is the project file results without a location point at when the report does not name the
	// declaring file (see SARIF.Manifest).
	Manifest string
	// Started and Elapsed are the run's start and wall time, written by JUnit only.
	Started time.Time
	Elapsed time.Duration
}

// New returns the renderer of a format with its options.
func New(f Format, o Options) (Renderer, error) {
	switch f {
	case FormatText:
		return &Text{Styles: o.Styles, Width: o.Width}, nil
	case FormatJSON:
		return &JSON{}, nil
	case FormatJUnit:
		return &JUnit{Root: o.Root, Started: o.Started, Elapsed: o.Elapsed}, nil
	case FormatSARIF:
		return &SARIF{Root: o.Root, Manifest: o.Manifest}, nil
	case FormatGitHub:
		return &GitHub{Root: o.Root}, nil
	case FormatGitLab:
		return &GitLab{Root: o.Root, Manifest: o.Manifest}, nil
	case FormatConcise:
		return &Concise{Root: o.Root, Manifest: o.Manifest}, nil
	}
	_, err := ParseFormat(string(f))
	return nil, err
}

// For returns the renderer of the named format (any case) with default paths. Styles and width only matter
// to the text format. An unknown format is an error that lists the valid ones.
func For(format string, s term.Styles, width int) (Renderer, error) {
	f, err := ParseFormat(format)
	if err != nil {
		return nil, err
	}
	return New(f, Options{Styles: s, Width: width})
}
