package conformance

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxSettingsScan bounds how much of a settings file settingsLine reads.
const maxSettingsScan = 4 << 20

// settingsLine returns the line of file on which a settings key ("deadlines.turn") is written: the line of
// the innermost part found, under [tool.astrabox] in pyproject.toml or at the top of astrabox.toml, whether
// written as `key = value`, as a dotted key or as a table header. 0 when the file cannot be read or the key
// is not found. It reads lines only; the TOML decoder has already accepted the file.
func settingsLine(file, key string) int {
	if file == "" {
		return 0
	}
	st, err := os.Stat(file)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	root := []string{"tool", "astrabox"}
	if filepath.Base(file) == "astrabox.toml" {
		root = nil
	}
	want := strings.Split(key, ".")
	var table []string
	best, bestDepth := 0, 0
	sc := bufio.NewScanner(io.LimitReader(f, maxSettingsScan))
	sc.Buffer(make([]byte, 64<<10), maxSettingsScan)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			table = splitKey(strings.Trim(line, "[] \t"))
			if d := matchDepth(table, root, want); d > bestDepth {
				best, bestDepth = n, d
			}
			continue
		}
		eq := strings.IndexByte(line, '=')
		if eq <= 0 || strings.HasPrefix(line, "#") {
			continue
		}
		full := append(append([]string(nil), table...), splitKey(line[:eq])...)
		d := matchDepth(full, root, want)
		if d > 0 && d < len(want) {
			// An inline table: `deadlines = { turn = nan }` holds the deeper parts on the same line.
			rest := line[eq+1:]
			for _, p := range want[d:] {
				if !strings.Contains(rest, p) {
					break
				}
				d++
			}
		}
		if d > bestDepth {
			best, bestDepth = n, d
		}
	}
	return best
}

// matchDepth is how many parts of want the key path (root, then want) matches: 0 unless it is under root.
func matchDepth(path, root, want []string) int {
	if len(path) < len(root) {
		return 0
	}
	for i, r := range root {
		if path[i] != r {
			return 0
		}
	}
	d := 0
	for i, p := range path[len(root):] {
		if i >= len(want) || p != want[i] {
			return 0
		}
		d++
	}
	return d
}

// splitKey splits a TOML key (`tool.astrabox`, `"a.b".c`, `limits . open-files`) into its parts.
func splitKey(s string) []string {
	var out []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}
