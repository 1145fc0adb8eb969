package release

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

// The Python side of the wheel: astrabox_kit.find_astrabox_bin() tells tests where the installed binary is
// (as ruff.find_ruff_bin does), and `python -m astrabox_kit` runs it.
const (
	initPy = `"""astrabox-kit: the astrabox conformance kit, installed as a Python tool.

The wheel carries the kit's binary as the script ` + "`astrabox`" + `; find_astrabox_bin() returns its path.
"""

import os
import sys
import sysconfig

__all__ = ["find_astrabox_bin"]


def find_astrabox_bin() -> str:
    """Return the path of the astrabox binary installed with this package."""
    name = "astrabox"
    candidates = [sysconfig.get_path("scripts")]
    user = sysconfig.get_path("scripts", scheme=sysconfig.get_preferred_scheme("user")) \
        if hasattr(sysconfig, "get_preferred_scheme") else None
    if user:
        candidates.append(user)
    candidates.append(os.path.join(os.path.dirname(sys.executable)))
    for d in candidates:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise FileNotFoundError("astrabox is not installed next to this Python: looked in " + ", ".join(candidates))
`
	mainPy = `"""python -m astrabox_kit ARGS runs astrabox ARGS."""

import os
import sys

from astrabox_kit import find_astrabox_bin

if __name__ == "__main__":
    path = find_astrabox_bin()
    os.execv(path, [path] + sys.argv[1:])
`
)

// WheelInfo is what the wheel's metadata says besides the name and version.
type WheelInfo struct {
	// Summary is the one-line description; Description the long one (Markdown).
	Summary, Description string
	// HomePage is the project's address.
	HomePage string
}

// WriteWheel writes the wheel of version v for t to w: the binary as the data script
// astrabox_kit-<v>.data/scripts/astrabox (executable), the astrabox_kit package, and the .dist-info
// directory with METADATA, WHEEL (Root-Is-Purelib false, one Tag line per platform tag) and RECORD (every
// file's SHA-256 in URL-safe base64 without padding, and size; RECORD itself unhashed), in the order that
// puts .dist-info last as PEP 427 recommends.
func WriteWheel(w io.Writer, v string, t Target, binary []byte, info WheelInfo) error {
	if err := CheckVersion(v); err != nil {
		return err
	}
	plats, err := t.WheelPlatforms()
	if err != nil {
		return err
	}
	dist := distName() + "-" + v
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n", Project, v, info.Summary)
	if info.HomePage != "" {
		fmt.Fprintf(&meta, "Home-page: %s\n", info.HomePage)
	}
	meta.WriteString("Requires-Python: >=3.9\nClassifier: Operating System :: MacOS\n" +
		"Classifier: Operating System :: POSIX :: Linux\nDescription-Content-Type: text/markdown\n\n")
	meta.WriteString(info.Description)
	var wheel strings.Builder
	wheel.WriteString("Wheel-Version: 1.0\nGenerator: astrabox internal/release\nRoot-Is-Purelib: false\n")
	for _, p := range plats {
		fmt.Fprintf(&wheel, "Tag: py3-none-%s\n", p)
	}
	files := []struct {
		name string
		data []byte
		exec bool
	}{
		{"astrabox_kit/__init__.py", []byte(initPy), false},
		{"astrabox_kit/__main__.py", []byte(mainPy), false},
		{dist + ".data/scripts/" + BinaryName, binary, true},
		{dist + ".dist-info/METADATA", []byte(meta.String()), false},
		{dist + ".dist-info/WHEEL", []byte(wheel.String()), false},
	}
	var record bytes.Buffer
	zw := zip.NewWriter(w)
	add := func(name string, data []byte, exec bool) error {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: epoch}
		mode := uint32(0o100644)
		if exec {
			mode = 0o100755
		}
		h.ExternalAttrs = mode << 16
		h.CreatorVersion = 3 << 8 // Unix, so that the mode is read
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("wheel %s: %w", name, err)
		}
		if _, err := fw.Write(data); err != nil {
			return fmt.Errorf("wheel %s: %w", name, err)
		}
		return nil
	}
	for _, f := range files {
		if err := add(f.name, f.data, f.exec); err != nil {
			return err
		}
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	recordName := dist + ".dist-info/RECORD"
	fmt.Fprintf(&record, "%s,,\n", recordName)
	if err := add(recordName, record.Bytes(), false); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("wheel: %w", err)
	}
	return nil
}
