package release

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// ChecksumsName is the checksums file of a release.
const ChecksumsName = "checksums.txt"

// Checksums renders the SHA-256 of each file as `sha256sum` does (hash, two spaces, name), sorted by name, so
// that `sha256sum -c checksums.txt` (`shasum -a 256 -c` on macOS) verifies a download.
func Checksums(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), n)
	}
	return b.Bytes()
}

// ParseChecksums reads a checksums file back: name to lower-case hex SHA-256. A line that is not a 64-digit
// hex hash, spaces and a name is an error naming the line.
func ParseChecksums(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || len(f[0]) != 64 {
			return nil, fmt.Errorf("%s line %d: want a SHA-256 (64 hex digits), spaces and a file name", ChecksumsName, n)
		}
		if _, err := hex.DecodeString(f[0]); err != nil {
			return nil, fmt.Errorf("%s line %d: the hash is not hexadecimal", ChecksumsName, n)
		}
		out[strings.TrimPrefix(f[1], "*")] = strings.ToLower(f[0])
	}
	return out, nil
}
