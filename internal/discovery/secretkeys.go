package discovery

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// secretWords mark a settings key whose value is a secret: any key under a `secrets` table (the Agent
// configuration's secrets, [tool.astrabox.config.secrets]) and any key named like a credential (the names
// of services' default secret-fields among them). A syntax error on such a key's line never quotes the line.
var secretWords = []string{"secret", "password", "passwd", "token", "credential", "api_key", "apikey", "api-key", "private"}

// IsSecretKey reports whether a settings key (a dotted path such as "tool.astrabox.config.secrets.x", or
// the text of the line it is written on) holds a secret value, so that an error about it names the key and
// the line, never the value.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// TOMLSyntaxMessage is the text of a TOML syntax error in src, as the kit prints it after the file, line and
// column: BurntSushi's message, unless the error is on the line of a secret key (see IsSecretKey, judged from
// the table header in force and the line itself), where the decoder quotes the value ("12345678901234567890
// is out of range for int64", "found \"Sup\""). Then the message names the key only.
func TOMLSyntaxMessage(src string, pe toml.ParseError) string {
	key, line := keyAtLine(src, pe.Position.Line)
	if !IsSecretKey(key) && !IsSecretKey(line) {
		return "invalid TOML: " + pe.Message
	}
	if key == "" {
		key = "the key on this line"
	} else {
		key = "`" + key + "`"
	}
	return fmt.Sprintf("invalid TOML: the value of %s, a secret, is not valid TOML (its text is not shown); write it as a quoted string, such as name = \"...\"", key)
}

// TOMLError is TOMLSyntaxMessage for any error of decoding src: a ParseError's message made safe, else a
// fixed text (the decoder's other errors may quote a value too).
func TOMLError(src string, err error) (msg string, line, col int) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return TOMLSyntaxMessage(src, pe), pe.Position.Line, pe.Position.Col
	}
	return "invalid TOML", 0, 0
}

// keyAtLine is the dotted key written on 1-based line n of a TOML document (the table header in force
// joined with the key before '='), and the line's own text (empty when n is out of range). It reads lines
// only: the document did not parse, so nothing finer can be trusted.
func keyAtLine(src string, n int) (string, string) {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return "", ""
	}
	header := ""
	for _, l := range lines[:n-1] {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			if end := strings.LastIndex(t, "]"); end > 0 {
				header = strings.Trim(t[:end], "[] \t")
			}
		}
	}
	line := lines[n-1]
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "[") {
		return strings.Trim(t, "[] \t"), line
	}
	k, _, ok := strings.Cut(t, "=")
	if !ok {
		return header, line
	}
	k = strings.TrimSpace(k)
	if header != "" {
		k = header + "." + k
	}
	return k, line
}
