package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestManPagesNameTheirCommandAndCarrySections: each page's .TH names its own command, and every page has
// ENVIRONMENT (every variable of `help environment`), EXIT STATUS and FILES before SEE ALSO.
func TestManPagesNameTheirCommandAndCarrySections(t *testing.T) {
	files, err := GeneratedFiles()
	if err != nil {
		t.Fatal(err)
	}
	th := regexp.MustCompile(`(?m)^\.TH "([^"]+)" "1"`)
	n := 0
	for name, data := range files {
		if !strings.HasPrefix(name, "docs/man/") {
			continue
		}
		n++
		page := string(data)
		want := strings.ToUpper(strings.TrimSuffix(strings.TrimPrefix(name, "docs/man/"), ".1"))
		if m := th.FindStringSubmatch(page); m == nil || m[1] != want {
			t.Errorf("%s: header %v, want %q", name, m, want)
		}
		env, exit, files, see := strings.Index(page, ".SH ENVIRONMENT"), strings.Index(page, ".SH EXIT STATUS"), strings.Index(page, ".SH FILES"), strings.Index(page, ".SH SEE ALSO")
		if env < 0 || exit < env || files < exit || (see >= 0 && see < files) {
			t.Errorf("%s: sections ENVIRONMENT %d, EXIT STATUS %d, FILES %d, SEE ALSO %d", name, env, exit, files, see)
		}
		for _, v := range Environment {
			if !strings.Contains(page, roffEscape(v.Name)) {
				t.Errorf("%s: ENVIRONMENT lacks %s", name, v.Name)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d man pages", n)
	}
	run := string(files["docs/man/astrabox-conformance-run.1"])
	if !strings.Contains(run, "\\-\\-exit\\-zero") || !strings.Contains(run, ".TP\n\\fB1\\fP") {
		t.Errorf("conformance run's EXIT STATUS is not its own:\n%s", run)
	}
}

// TestCompletionOffersAreasAndListItems: --check completes area names and the item after a comma.
func TestCompletionOffersAreasAndListItems(t *testing.T) {
	cases := map[string][]string{
		"LEAK-LOG,TURN-I": {"LEAK-LOG,TURN-IDEMPOTENT\t"},
		"sec":             {"secrets\t"},
		"leak-l":          {"LEAK-LOG\t"},
	}
	for in, want := range cases {
		code, out, _ := run(t, "__complete", "conformance", "run", "--check", in)
		for _, w := range want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("--check %q: exit %d, completions %q lack %q", in, code, out, w)
			}
		}
	}
	if _, out, _ := run(t, "__complete", "conformance", "explain", "sec"); strings.Contains(out, "secrets\t") {
		t.Errorf("explain completes an area, which it does not accept: %q", out)
	}
}
