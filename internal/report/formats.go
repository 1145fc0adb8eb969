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

// Formats returns the names of the output formats ParseFormat accepts, in the order the docs list them.
func Formats() []string {
	out := make([]string, len(formatOrder))
	for i, f := range formatOrder {
		out[i] = string(f)
	}
	return out
}

// ParseFormat returns the format a name denotes, ignoring case and surrounding space. Every command that
// takes --format validates it here; an unknown name is an error that lists the valid ones.
func ParseFormat(name string) (Format, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	for _, f := range formatOrder {
		if string(f) == want {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown output format %q: use one of %s", name, strings.Join(Formats(), ", "))
}

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
