package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// kitSecret matches the shape of every secret the kit makes (configuration canaries, workload identity tokens
// and the double's credentials), whether or not this process planted it.
var kitSecret = regexp.MustCompile(`astx_(?:canary|wid|cred)_[-0-9A-Za-z_]+`)

// errorText makes an error message safe to print: every secret the process planted is masked in every
// encoding the kit hunts, anything shaped like a kit secret is masked, control characters (escape sequences
// that could recolour, move or retitle the terminal, carriage returns that could overwrite the line) become
// visible escapes, and a line that would read as a CI workflow command (`::error ...`) no longer does.
func errorText(msg string) string {
	msg = secrets.Process().Mask(msg)
	msg = kitSecret.ReplaceAllString(msg, secrets.Marker("raw"))
	var b strings.Builder
	for _, r := range msg {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, "::") {
			lines[i] = strings.Replace(l, "::", ": :", 1)
		}
	}
	return strings.Join(lines, "\n")
}
