package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// safeErrorText makes an error's text safe for a terminal and a CI log before it is printed: it may carry a
// provider's exception text. Control characters become visible escapes (\x1b, as the text report shows
// them), and a line that would start a workflow command (GitHub's "::error ...", Azure's "##vso[") has its
// first character escaped, so a provider cannot inject commands or move the terminal.
func safeErrorText(s string) string {
	lines := strings.Split(report.SafeText(s), "\n")
	for i, ln := range lines {
		t := strings.TrimLeft(ln, " \t")
		if strings.HasPrefix(t, "::") || strings.HasPrefix(t, "##[") || strings.HasPrefix(t, "##vso[") {
			lines[i] = ln[:len(ln)-len(t)] + `\x` + hex2(t[0]) + t[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// hex2 is a byte as two lowercase hex digits.
func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// strconvErr is the parser detail pflag appends to a bad flag value.
var strconvErr = regexp.MustCompile(`: strconv\.Parse(Int|Uint|Float|Bool|Duration)?: parsing "[^"]*": (invalid syntax|value out of range)`)

// cleanFlagError rewrites a flag parsing error without the parser's internals: `invalid argument "x" for
// "--seed" flag: strconv.ParseInt: parsing "x": invalid syntax` becomes `invalid argument "x" for "--seed"
// flag: not a whole number`.
func cleanFlagError(msg string) string {
	return strconvErr.ReplaceAllStringFunc(msg, func(m string) string {
		g := strconvErr.FindStringSubmatch(m)
		switch {
		case g[2] == "value out of range":
			return ": out of range"
		case g[1] == "Float":
			return ": not a number"
		case g[1] == "Bool":
			return ": use true or false"
		}
		return ": not a whole number"
	})
}

// exactArgs accepts exactly one positional argument named what, with an error that names it.
func exactArgs(what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 1 {
			return nil
		}
		msg := fmt.Sprintf("%s needs one %s", cmd.CommandPath(), what)
		if len(args) > 1 {
			msg += fmt.Sprintf(", got %d (%s)", len(args), strings.Join(args, " "))
		}
		if hint != "" {
			msg += "; " + hint
		}
		return usagef("%s", msg)
	}
}

// minArgs accepts one or more positional arguments named what.
func minArgs(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s needs at least one %s", cmd.CommandPath(), what)
		}
		return nil
	}
}

// maxOneArg accepts at most one positional argument named what.
func maxOneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usagef("%s takes at most one %s, got %d (%s)", cmd.CommandPath(), what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}
