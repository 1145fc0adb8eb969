package cli

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// exitStatus is the EXIT STATUS section of a command's man page, by command path; commands not listed exit
// 0 on success and 2 on bad usage or when they cannot do what was asked.
var exitStatus = map[string][][2]string{
	"astrabox conformance run": {
		{"0", "no check failed (warnings, skipped and not-applicable checks allowed); also with --exit-zero when checks failed"},
		{"1", "at least one check failed or was flaky (with --fail-on warning also when one warned)"},
		{"2", "the kit could not decide: bad usage, unreadable project, a provider that does not load, conflicting providers, a check no scenario exercised, Ctrl-C"},
	},
	"astrabox report merge": {
		{"0", "the merged report has no failure"},
		{"1", "the merged report has a failed or flaky check"},
		{"2", "bad usage, an unreadable report, or reports of different runs"},
	},
	"astrabox providers": {
		{"0", "exactly one provider is declared (or chosen) and it loads as a RuntimePreparationProvider subclass with a valid name"},
		{"2", "bad usage, or the platform could not start the provider: none declared, several conflict, or it does not load"},
	},
	"astrabox image check-wrapper": {
		{"0", "every probe passed"},
		{"1", "a probe failed"},
		{"2", "the wrapper is missing, not executable or cannot be started, or bad usage"},
	},
	"astrabox simulate explore": {
		{"0", "no generated scenario failed a check"},
		{"1", "some scenario failed a check (each is shrunk and saved)"},
		{"2", "bad usage, or the provider could not be loaded"},
	},
}

// manFiles is the FILES section every man page of a provider-facing command carries.
var manFiles = [][2]string{
	{"pyproject.toml, setup.cfg, setup.py", "the provider project: its entry point in the astrabox.providers.runtime_preparation group, and [tool.astrabox] settings"},
	{"astrabox.toml", "the kit's settings, when the project keeps them outside pyproject.toml"},
	{".astrabox/failures/", "shrunk failures of explorations (replay one with astrabox simulate run FILE)"},
}

// manPages renders one man page per available command. Each page's header names its own command
// (ASTRABOX-CONFORMANCE-RUN), and ENVIRONMENT, EXIT STATUS and FILES sections come before SEE ALSO.
func manPages(root *cobra.Command) (map[string][]byte, error) {
	out := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		children := c.Commands()
		sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
		for _, ch := range children {
			if err := walk(ch); err != nil {
				return err
			}
		}
		hdr := &doc.GenManHeader{Title: strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-")), Section: "1",
			Date: &docsDate, Source: "astrabox", Manual: "astrabox manual"}
		var b bytes.Buffer
		if err := doc.GenMan(c, hdr, &b); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		page := b.String()
		extra := manSections(c)
		if i := strings.Index(page, ".SH SEE ALSO"); i >= 0 {
			page = page[:i] + extra + page[i:]
		} else {
			page += extra
		}
		out["docs/man/"+strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = []byte(page)
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return out, nil
}

// manSections is the roff of a page's ENVIRONMENT, EXIT STATUS and FILES sections.
func manSections(c *cobra.Command) string {
	var b strings.Builder
	item := func(tag, text string) { fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", roffEscape(tag), roffEscape(text)) }
	b.WriteString(".SH ENVIRONMENT\n")
	for _, v := range Environment {
		item(v.Name, v.Purpose)
	}
	b.WriteString("\n.SH EXIT STATUS\n")
	codes, ok := exitStatus[c.CommandPath()]
	if !ok {
		codes = [][2]string{{"0", "success"}, {"2", "bad usage, or the command could not do what was asked"}}
	}
	for _, e := range codes {
		item(e[0], e[1])
	}
	b.WriteString("\n.SH FILES\n")
	for _, f := range manFiles {
		item(f[0], f[1])
	}
	b.WriteString("\n")
	return b.String()
}

// roffEscape keeps text literal in roff: backslashes doubled, a leading dot or quote neutralised, hyphens
// escaped so they stay hyphens.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
