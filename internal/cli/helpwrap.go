package cli

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// widthAnnotation is the root command's annotation that holds the terminal width help is fitted to.
const widthAnnotation = "astrabox/width"

var registerHelpFuncs sync.Once

// fitHelpToWidth makes --help output fit the terminal: the long description's paragraphs are re-wrapped
// when they are wider than the terminal, and flag descriptions wrap under their column (pflag's
// FlagUsagesWrapped). Lists, examples and indented blocks keep their lines.
func fitHelpToWidth(root *cobra.Command, width int) {
	registerHelpFuncs.Do(func() {
		cobra.AddTemplateFunc("fitFlags", func(c *cobra.Command, fs *pflag.FlagSet) string {
			return fs.FlagUsagesWrapped(helpWidth(c))
		})
		cobra.AddTemplateFunc("fitText", func(c *cobra.Command, s string) string { return reflow(s, helpWidth(c)) })
	})
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[widthAnnotation] = strconv.Itoa(width)
	usage := root.UsageTemplate()
	usage = strings.ReplaceAll(usage, "{{.LocalFlags.FlagUsages", "{{fitFlags $ .LocalFlags")
	usage = strings.ReplaceAll(usage, "{{.InheritedFlags.FlagUsages", "{{fitFlags $ .InheritedFlags")
	root.SetUsageTemplate(usage)
	root.SetHelpTemplate(strings.Replace(root.HelpTemplate(), "{{. | trimTrailingWhitespaces}}", "{{fitText $ . | trimTrailingWhitespaces}}", 1))
}

// helpWidth is the width help is fitted to (80 when unknown).
func helpWidth(c *cobra.Command) int {
	if n, err := strconv.Atoi(c.Root().Annotations[widthAnnotation]); err == nil && n >= 40 {
		return n
	}
	return 80
}

// reflow re-wraps the plain paragraphs of s that have a line wider than width. A paragraph is plain when none
// of its lines is indented or starts a list item; others are kept as written.
func reflow(s string, width int) string {
	paras := strings.Split(s, "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		wide, plain := false, true
		for _, ln := range lines {
			wide = wide || ansi.StringWidth(ln) > width
			t := strings.TrimSpace(ln)
			plain = plain && ln == strings.TrimLeft(ln, " \t") && !strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "* ") && !strings.HasPrefix(t, "|")
		}
		if wide && plain {
			paras[i] = wrapWords(strings.Join(lines, " "), width)
		}
	}
	return strings.Join(paras, "\n\n")
}

// wrapWords wraps text at spaces to width columns; a word longer than width stands on a line of its own
// (never split, so IDs such as PLAN-STABLE and flags such as --fail-on stay greppable).
func wrapWords(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case ansi.StringWidth(line)+1+ansi.StringWidth(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// fitLine is a writer for one-line progress displays ("\r\x1b[K" then the line): each write's text is cut to
// width-1 columns, so the line never wraps (a wrapped line stacks a new one per update) on a narrow terminal.
type fitLine struct {
	w     io.Writer
	width int
}

func (f fitLine) Write(p []byte) (int, error) {
	s := string(p)
	prefix := ""
	for _, lead := range []string{"\r", "\x1b[K"} {
		if strings.HasPrefix(s, lead) {
			prefix, s = prefix+lead, s[len(lead):]
		}
	}
	width := f.width
	if width <= 0 {
		width = term.DefaultWidth
	}
	if ansi.StringWidth(s) > width-1 {
		s = ansi.Truncate(s, width-1, "…")
	}
	if _, err := io.WriteString(f.w, prefix+s); err != nil {
		return 0, err
	}
	return len(p), nil
}
