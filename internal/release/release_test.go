package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"
)

var fakeBinary = []byte("\x7fELF not really a binary, but bytes to carry")

func buildWheel(t *testing.T, v string, tg Target) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteWheel(&b, v, tg, fakeBinary, WheelInfo{Summary: "kit", Description: "# astrabox\n"}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWheelNames: the platform tags pip matches on each released platform, in the wheel's file name.
func TestWheelNames(t *testing.T) {
	want := map[Target]string{
		{"linux", "amd64"}:  "astrabox_kit-1.2.3-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.musllinux_1_1_x86_64.whl",
		{"linux", "arm64"}:  "astrabox_kit-1.2.3-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl",
		{"darwin", "amd64"}: "astrabox_kit-1.2.3-py3-none-macosx_12_0_x86_64.whl",
		{"darwin", "arm64"}: "astrabox_kit-1.2.3-py3-none-macosx_12_0_arm64.whl",
	}
	for _, tg := range Targets {
		got, err := WheelName("1.2.3", tg)
		if err != nil || got != want[tg] {
			t.Errorf("%s: %q %v, want %q", tg, got, err, want[tg])
		}
	}
	if _, err := WheelName("1.2.3", Target{"windows", "amd64"}); err == nil {
		t.Error("a Windows wheel was named")
	}
	if got := ArchiveName("1.2.3", Target{"darwin", "arm64"}); got != "astrabox_1.2.3_darwin_arm64.tar.gz" {
		t.Errorf("archive name %q", got)
	}
}

// TestCheckVersion: the PEP 440 subset of release versions; a tag name or a Go pseudo-version is refused with
// what to write instead.
func TestCheckVersion(t *testing.T) {
	for _, ok := range []string{"0.1.0", "1.2.3rc1", "1.2.3a2", "2.0.0.post1", "0.0.0.dev0", "1.2.3b1.dev2"} {
		if err := CheckVersion(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "v1.2.3", "1.2", "1.2.3-rc1", "0.0.0-20240101-abcdef", "1.2.3+local", "1.2.3 "} {
		err := CheckVersion(bad)
		if err == nil || !strings.Contains(err.Error(), "MAJOR.MINOR.PATCH") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestWheelLayout reads a wheel back as an installer does: every file listed in RECORD with its true
// SHA-256 and size, RECORD itself unhashed, the binary an executable data script, WHEEL not pure and
// tagged for every platform of the name, METADATA naming astrabox-kit.
func TestWheelLayout(t *testing.T) {
	tg := Target{"linux", "arm64"}
	data := buildWheel(t, "1.2.3", tg)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	modes := map[string]uint32{}
	var order []string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = b
		modes[f.Name] = f.ExternalAttrs >> 16
		order = append(order, f.Name)
	}
	script := "astrabox_kit-1.2.3.data/scripts/astrabox"
	if !bytes.Equal(files[script], fakeBinary) || modes[script]&0o111 == 0 {
		t.Fatalf("the binary is not the executable script %s (mode %o)", script, modes[script])
	}
	if last := order[len(order)-1]; last != "astrabox_kit-1.2.3.dist-info/RECORD" {
		t.Errorf("last entry %s, want RECORD", last)
	}
	record := string(files["astrabox_kit-1.2.3.dist-info/RECORD"])
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(record), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			t.Fatalf("RECORD line %q", line)
		}
		listed[f[0]] = true
		if strings.HasSuffix(f[0], "/RECORD") {
			if f[1] != "" || f[2] != "" {
				t.Errorf("RECORD hashes itself: %q", line)
			}
			continue
		}
		body, ok := files[f[0]]
		if !ok {
			t.Fatalf("RECORD lists %s, which the wheel does not hold", f[0])
		}
		sum := sha256.Sum256(body)
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); f[1] != want {
			t.Errorf("%s: RECORD says %s, the file hashes to %s", f[0], f[1], want)
		}
		if f[2] != strconv.Itoa(len(body)) {
			t.Errorf("%s: RECORD size %s, file %d", f[0], f[2], len(body))
		}
	}
	for name := range files {
		if !listed[name] {
			t.Errorf("%s is not in RECORD", name)
		}
	}
	wheel := string(files["astrabox_kit-1.2.3.dist-info/WHEEL"])
	name, _ := WheelName("1.2.3", tg)
	plats, _ := tg.WheelPlatforms()
	for _, p := range plats {
		if !strings.Contains(wheel, "Tag: py3-none-"+p+"\n") || !strings.Contains(name, p) {
			t.Errorf("platform %s missing from WHEEL or the name", p)
		}
	}
	if !strings.Contains(wheel, "Root-Is-Purelib: false\n") {
		t.Error("WHEEL says the wheel is pure")
	}
	meta := string(files["astrabox_kit-1.2.3.dist-info/METADATA"])
	for _, want := range []string{"Name: astrabox-kit\n", "Version: 1.2.3\n", "Requires-Python: >=3.9\n", "\n\n# astrabox\n"} {
		if !strings.Contains(meta, want) {
			t.Errorf("METADATA lacks %q", want)
		}
	}
}

// TestReproducible: the same binary and version give the same bytes (so the same checksums) every time.
func TestReproducible(t *testing.T) {
	tg := Target{"darwin", "arm64"}
	if !bytes.Equal(buildWheel(t, "1.0.0", tg), buildWheel(t, "1.0.0", tg)) {
		t.Error("two wheels of the same inputs differ")
	}
	var a, b bytes.Buffer
	for _, w := range []*bytes.Buffer{&a, &b} {
		if err := WriteArchive(w, "1.0.0", tg, fakeBinary, []File{{Name: "README.md", Data: []byte("hi")}}); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same inputs differ")
	}
}

// TestArchiveLayout: the archive holds one directory with the executable binary and the extra files.
func TestArchiveLayout(t *testing.T) {
	var b bytes.Buffer
	tg := Target{"linux", "amd64"}
	if err := WriteArchive(&b, "1.0.0", tg, fakeBinary, []File{{Name: "README.md", Data: []byte("read me")}}); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h.Mode
		if h.Name == "astrabox_1.0.0_linux_amd64/astrabox" {
			body, _ := io.ReadAll(tr)
			if !bytes.Equal(body, fakeBinary) {
				t.Error("the archived binary differs")
			}
		}
	}
	if got["astrabox_1.0.0_linux_amd64/astrabox"] != 0o755 || got["astrabox_1.0.0_linux_amd64/README.md"] != 0o644 {
		t.Fatalf("entries %v", got)
	}
}

// TestChecksums: the file sha256sum -c reads, and back; a broken line is an error naming the line.
func TestChecksums(t *testing.T) {
	files := map[string][]byte{"b.whl": []byte("b"), "a.tar.gz": []byte("a")}
	out := Checksums(files)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  a.tar.gz") {
		t.Fatalf("checksums:\n%s", out)
	}
	back, err := ParseChecksums(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("b"))
	if back["b.whl"] != hex.EncodeToString(sum[:]) {
		t.Errorf("parsed %v", back)
	}
	if _, err := ParseChecksums([]byte(lines[0] + "\nnot a line\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a broken line: %v", err)
	}
}

// FuzzParseChecksums: any input is parsed or refused with an error, never a crash.
func FuzzParseChecksums(f *testing.F) {
	f.Add(Checksums(map[string][]byte{"x": []byte("y")}))
	f.Add([]byte("zz  name\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseChecksums(data)
		if err == nil {
			for _, h := range m {
				if len(h) != 64 {
					t.Fatalf("hash %q kept", h)
				}
			}
		}
	})
}
