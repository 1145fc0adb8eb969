// Package term decides once how the kit talks to a terminal: whether to use colour, how wide the screen is,
// which lipgloss styles to draw with, and which streams to read and write (an injectable I/O bundle).
package term

import (
	"os"

	xterm "github.com/charmbracelet/x/term"
	"github.com/mattn/go-isatty"
)

// DefaultWidth is the width assumed when the output is not a terminal or its size is unknown: a CI log.
const DefaultWidth = 80

// DetectColor decides whether output should be coloured, from the environment (read through getenv) and from
// whether the output is a terminal. The rules, first match wins:
//
//   - NO_COLOR with any non-empty value disables colour;
//   - FORCE_COLOR or CLICOLOR_FORCE with a non-empty value other than "0" enables colour, even without a
//     terminal;
//   - CLICOLOR=0 disables colour;
//   - TERM=dumb disables colour;
//   - otherwise colour is used exactly when the output is a terminal.
func DetectColor(getenv func(string) string, isTTY bool) bool {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if getenv("NO_COLOR") != "" {
		return false
	}
	for _, name := range []string{"FORCE_COLOR", "CLICOLOR_FORCE"} {
		if v := getenv(name); v != "" && v != "0" {
			return true
		}
	}
	if getenv("CLICOLOR") == "0" {
		return false
	}
	if getenv("TERM") == "dumb" {
		return false
	}
	return isTTY
}

// IsTerminal reports whether f is a terminal (including a Cygwin or MSYS pseudo-terminal). A nil file is not.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}

// Width returns the number of columns of the terminal f, or DefaultWidth when f is not a terminal or its size
// cannot be read.
func Width(f *os.File) int {
	if !IsTerminal(f) {
		return DefaultWidth
	}
	w, _, err := xterm.GetSize(f.Fd())
	if err != nil || w <= 0 {
		return DefaultWidth
	}
	return w
}
