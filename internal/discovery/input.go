package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// Limits on the project files discovery reads. Real files are far below them; past them a file is refused
// with its name (and line) before any decoder sees it, so that a hostile or broken file cannot hang the kit
// or exhaust its memory.
const (
	// MaxProjectFileSize bounds pyproject.toml, setup.cfg, setup.py and astrabox.toml (1 MiB).
	MaxProjectFileSize = 1 << 20
	// MaxSmallFileSize bounds the small pointer files: .python-version, .tool-versions, a .venv file,
	// pyvenv.cfg and installed entry_points.txt files (64 KiB).
	MaxSmallFileSize = 64 << 10
	// MaxTOMLNesting bounds how deeply arrays and inline tables may nest in a TOML file.
	MaxTOMLNesting = 32
	// MaxTOMLKeyParts bounds the parts of a key path: a table header's dotted parts plus the dotted parts
	// of the keys inside it, inline tables included (tool.poetry.group.dev.dependencies has 5).
	MaxTOMLKeyParts = 64
	// MaxTOMLEntries bounds the table headers plus key/value pairs of a TOML file (a large real
	// pyproject.toml has a few hundred): 1 MiB of one-line tables would otherwise take the decoder seconds.
	MaxTOMLEntries = 20000
	// MaxTOMLPathParts bounds the sum, over every table header and key, of the parts of its full path (a
	// large real file has a few thousand): the decoder and the line scanner copy each key's full path.
	MaxTOMLPathParts = 100000
)

// readBounded reads a project file that must be a regular file of at most limit bytes. It returns
// fs.ErrNotExist (wrapped in nothing) when the file is absent, and an *Error otherwise. A FIFO, a device
// (a symlink to /dev/zero) or a directory is refused without reading it.
func readBounded(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, &Error{File: path, Message: "cannot read file", Err: err, Hint: "check the file's permissions"}
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(path, st.Mode())
	}
	if st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return nil, &Error{File: path, Message: "cannot read file", Err: err, Hint: "check the file's permissions"}
	}
	defer f.Close()
	// The file may have been swapped between the two looks: check what was opened.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		mode := fs.FileMode(0)
		if st != nil {
			mode = st.Mode()
		}
		return nil, notRegular(path, mode)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{File: path, Message: "cannot read file", Err: err, Hint: "check the file's permissions"}
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, int64(len(b)), limit)
	}
	return b, nil
}

func notRegular(path string, mode fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case mode&fs.ModeDevice != 0 || mode&fs.ModeCharDevice != 0:
		kind = "a device"
	case mode.IsDir():
		kind = "a directory"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return &Error{File: path, Message: "is " + kind + ", not a regular file; astrabox reads project files only when they are regular files",
		Hint: "replace it with an ordinary file (a symlink to an ordinary file is fine)"}
}

func tooLarge(path string, size, limit int64) error {
	return &Error{File: path, Message: fmt.Sprintf("is %d bytes, more than the %d bytes astrabox reads from a project file", size, limit),
		Hint: "a real project file is far smaller: check that this is the file you meant"}
}

// checkText refuses a file that is not UTF-8 text, naming UTF-16 (what some Windows editors save) when its
// byte-order mark or its NUL bytes say so. Both setuptools (setup.cfg) and TOML read UTF-8 only.
func checkText(path string, b []byte) error {
	utf16 := bytes.HasPrefix(b, []byte{0xff, 0xfe}) || bytes.HasPrefix(b, []byte{0xfe, 0xff})
	if !utf16 && len(b) >= 2 && bytes.IndexByte(b[:min(len(b), 512)], 0) >= 0 {
		utf16 = true
	}
	if utf16 {
		return &Error{File: path, Line: 1, Message: "is encoded in UTF-16; it must be UTF-8",
			Hint: "save the file as UTF-8 (without a byte-order mark), e.g. iconv -f UTF-16 -t UTF-8"}
	}
	if !utf8.Valid(b) {
		line := 1 + bytes.Count(b[:firstInvalidUTF8(b)], []byte("\n"))
		return &Error{File: path, Line: line, Message: "is not valid UTF-8 text",
			Hint: "save the file as UTF-8; the line shown holds the first byte that is not UTF-8"}
	}
	return nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
