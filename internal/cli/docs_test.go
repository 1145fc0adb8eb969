package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
)

// codeBlocks returns the fenced code blocks of a markdown section (from its "## " heading to the next).
func codeBlocks(t *testing.T, doc, heading string) []string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```")[1:]
	var out []string
	for i := 0; i < len(blocks); i += 2 {
		_, body, _ := strings.Cut(blocks[i], "\n")
		out = append(out, body)
	}
	return out
}

// TestGettingStartedIsTrue follows docs/getting-started.md as a newcomer would: scaffold, run (the verdict
// line the page shows), break the provider the way the page says (the checks it says fail, the lines of the
// failure it quotes), fix it (green again).
func TestGettingStartedIsTrue(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	data, err := os.ReadFile(repoPath("docs/getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	dir := filepath.Join(t.TempDir(), "my-provider")
	if code, _, stderr := run(t, "init", dir); code != 0 {
		t.Fatalf("init: %s", stderr)
	}
	// 3. Run the suite: the verdict line.
	var verdict string
	for _, b := range codeBlocks(t, doc, "## 3. Run the suite") {
		if strings.Contains(b, "PASSED") {
			verdict = strings.TrimSpace(b)
		}
	}
	code, out, stderr := run(t, "conformance", "run", dir, "--python", "python3")
	got := ""
	for _, ln := range strings.Split(out, "\n") {
		if strings.HasPrefix(ln, "PASSED") || strings.HasPrefix(ln, "FAILED") || strings.HasPrefix(ln, "NOT DECIDED") {
			got = ln
		}
	}
	if code != 0 || got != verdict {
		t.Errorf("step 3: exit %d, verdict line %q, the page says %q\n%s", code, got, verdict, stderr)
	}
	// 4. Break it: log the configuration in prepare_session.
	provider := filepath.Join(dir, "src", "my_provider", "provider.py")
	src, err := os.ReadFile(provider)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(src), "from typing import Any, Mapping\n", "import logging\nfrom typing import Any, Mapping\n\nlog = logging.getLogger(__name__)\n", 1)
	body := regexp.MustCompile(`(async def prepare_session\(self, \*, context: SessionPreparationContext\) -> RuntimeMaterials:\n(?:        #.*\n)*)        return RuntimeMaterials\(\)`)
	broken = body.ReplaceAllString(broken, "${1}        log.info(\"preparing session with %s\", context.config)\n        return RuntimeMaterials()")
	if broken == string(src) || !strings.Contains(broken, "log.info(") {
		t.Fatal("could not apply the page's change to the scaffold")
	}
	if err := os.WriteFile(provider, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "conformance", "run", dir, "--python", "python3")
	failed := regexp.MustCompile(`(?m)^  FAIL   (\S+)`).FindAllStringSubmatch(out, -1)
	var ids []string
	for _, m := range failed {
		ids = append(ids, m[1])
	}
	sort.Strings(ids)
	if code != 1 || strings.Join(ids, ",") != "LEAK-LOG,SYNC-NO-LOG-CONFIG" || !strings.Contains(doc, "Two checks fail") {
		t.Errorf("step 4: exit %d, failed %v; the page says two fail: LEAK-LOG and SYNC-NO-LOG-CONFIG\n%s", code, ids, out)
	}
	quote := codeBlocks(t, doc, "## 4. Break something and read the failure")
	flat := strings.Join(strings.Fields(out), " ")
	for _, ln := range strings.Split(quote[len(quote)-1], "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" || ln == "..." || strings.HasSuffix(ln, "...") {
			continue
		}
		if !strings.Contains(flat, strings.Join(strings.Fields(ln), " ")) {
			t.Errorf("step 4: the page quotes %q, the kit does not print it", ln)
		}
	}
	// 6. Fix and re-run.
	fixed := strings.Replace(broken, `log.info("preparing session with %s", context.config)`, `log.info("preparing session %s", context.session_id)`, 1)
	if err := os.WriteFile(provider, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "conformance", "run", dir, "--python", "python3"); code != 0 || !strings.Contains(out, "PASSED") {
		t.Errorf("step 6: exit %d\n%s", code, out)
	}
}

// TestReportFormatExamplesUseRealIDs: every check ID and area the report-format page shows in its examples
// exists (the page once showed SESS004 and "Session materials", which never did).
func TestReportFormatExamplesUseRealIDs(t *testing.T) {
	data, err := os.ReadFile(repoPath("docs/report-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	areas := map[string]bool{}
	for _, c := range conformance.Checks() {
		known[c.ID] = true
		areas[c.Area] = true
		for _, cl := range c.Clauses {
			known[cl] = true
		}
	}
	doc := string(data)
	rows := regexp.MustCompile(`(?m)^  (?:FAIL|WARN|SKIP|PASS|FLAKY|NOTEX|N/A) +([A-Z][A-Z0-9-]+)`).FindAllStringSubmatch(doc, -1)
	if len(rows) < 4 {
		t.Fatalf("found only %d check rows in the text example: the test reads nothing", len(rows))
	}
	for _, m := range rows {
		if !known[m[1]] {
			t.Errorf("text example shows check %s, which does not exist", m[1])
		}
	}
	for _, re := range []string{`"check": "([^"]+)"`, `title=([A-Z][A-Z0-9-]+)::`, `"clauses": \["([^"]+)"`} {
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(doc, -1) {
			if !known[m[1]] {
				t.Errorf("example shows check %s, which does not exist", m[1])
			}
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z-]+) \(\d+ (?:failed|warning|passed)`).FindAllStringSubmatch(doc, -1) {
		if !areas[m[1]] {
			t.Errorf("text example shows area %q, which does not exist", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`"area": "([^"]+)"`).FindAllStringSubmatch(doc, -1) {
		if !areas[m[1]] {
			t.Errorf("JSON example shows area %q, which does not exist", m[1])
		}
	}
	if strings.Contains(doc, "SESS004") {
		t.Error("the page still names SESS004")
	}
}
