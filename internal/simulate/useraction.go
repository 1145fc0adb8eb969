package simulate

import (
	"fmt"
	"net"
	"strings"
	"unicode"
	"unicode/utf8"
)

// UserActionStatuses are the statuses a user action may carry.
var UserActionStatuses = []string{"pending", "unknown", "failed", "expired"}

// ValidateUserAction applies the host's validation of a user action and returns the problems found (none when
// it is valid). The rules are those of the Python SDK's astrabox.seams.validate_user_action, and one table
// (testdata/user_actions.json) proves both give the same answer: message is 1 to 1,000 printable characters,
// status is one of UserActionStatuses, and url, when present, is an absolute http or https URL of at most
// 2,048 characters with a host, without user information, whitespace or non-printable characters. Each
// problem starts with the field it concerns (message, status, url) and never quotes the message or the URL.
func ValidateUserAction(message string, url *string, status string) []string {
	var out []string
	switch n := utf8.RuneCountInString(message); {
	case n == 0:
		out = append(out, "message is empty; it must be 1 to 1000 printable characters")
	case n > 1000:
		out = append(out, fmt.Sprintf("message is %d characters; at most 1000 are allowed", n))
	}
	if bad, first := nonPrintable(message); bad > 0 {
		out = append(out, fmt.Sprintf("message contains %d non-printable character(s) (first: U+%04X)", bad, first))
	}
	known := false
	for _, s := range UserActionStatuses {
		known = known || s == status
	}
	if !known {
		shown := status
		if utf8.RuneCountInString(status) > 40 {
			shown = "a long str"
		}
		out = append(out, fmt.Sprintf("status %q is not one of %s", shown, strings.Join(UserActionStatuses, ", ")))
	}
	if url != nil {
		out = append(out, urlProblems(*url)...)
	}
	return out
}

// nonPrintable counts the characters Python's str.isprintable refuses (everything but letters, marks,
// numbers, punctuation, symbols and the ASCII space) and returns the first.
func nonPrintable(s string) (n int, first rune) {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			if n == 0 {
				first = r
			}
			n++
		}
	}
	return n, first
}

// urlProblems checks a user action's URL.
func urlProblems(u string) []string {
	var out []string
	if n := utf8.RuneCountInString(u); n > 2048 {
		out = append(out, fmt.Sprintf("url is %d characters; at most 2048 are allowed", n))
	}
	scheme, netloc, ok := splitURL(u)
	switch {
	case !ok:
		out = append(out, "url cannot be parsed")
	default:
		if scheme != "http" && scheme != "https" {
			out = append(out, "url must be an absolute http or https URL")
		} else if urlHost(netloc) == "" {
			out = append(out, "url has no host")
		}
		if strings.Contains(netloc, "@") {
			out = append(out, "url carries user information (user:pass@); remove it")
		}
	}
	for _, r := range u {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			out = append(out, "url contains whitespace or non-printable characters")
			break
		}
	}
	return out
}

// splitURL splits the scheme and network location off a URL the way Python's urllib.parse.urlsplit does:
// leading control characters and spaces are dropped, tabs and line breaks removed, the scheme is the
// lower-cased run of scheme characters before the first colon (starting with a letter), and the network
// location follows "//" up to the first "/", "?" or "#". Unbalanced or invalid brackets make ok false.
func splitURL(u string) (scheme, netloc string, ok bool) {
	u = strings.TrimLeftFunc(u, func(r rune) bool { return r <= ' ' })
	u = strings.NewReplacer("\t", "", "\r", "", "\n", "").Replace(u)
	if i := strings.IndexByte(u, ':'); i > 0 && isASCIILetter(u[0]) && strings.Trim(u[:i], schemeChars) == "" {
		scheme, u = strings.ToLower(u[:i]), u[i+1:]
	}
	if rest, ok := strings.CutPrefix(u, "//"); ok {
		netloc = rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			netloc = rest[:i]
		}
	}
	open, close := strings.Contains(netloc, "["), strings.Contains(netloc, "]")
	if open != close {
		return "", "", false // Python: "Invalid IPv6 URL"
	}
	if open {
		_, after, _ := strings.Cut(netloc, "[")
		host, _, _ := strings.Cut(after, "]")
		if !strings.HasPrefix(host, "v") && (net.ParseIP(host) == nil || !strings.Contains(host, ":")) {
			return "", "", false // Python: an invalid bracketed host
		}
	}
	return scheme, netloc, true
}

const schemeChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-."

func isASCIILetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// urlHost is the host of a network location as Python's SplitResult.hostname gives it ("" for none): after
// any user information, inside brackets or before the port.
func urlHost(netloc string) string {
	if i := strings.LastIndexByte(netloc, '@'); i >= 0 {
		netloc = netloc[i+1:]
	}
	if after, ok := strings.CutPrefix(netloc, "["); ok {
		host, _, _ := strings.Cut(after, "]")
		return host
	}
	host, _, _ := strings.Cut(netloc, ":")
	return host
}
