package discovery

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// tempDirSource says where os.TempDir took its answer from, for messages.
func tempDirSource() string {
	if os.Getenv("TMPDIR") != "" {
		return "$TMPDIR"
	}
	return "the default temporary directory"
}

// tempDirError describes a temporary directory the kit cannot use: which path, why, and what to do. It
// blames the directory, never the interpreter that was about to run in it.
func tempDirError(dir string, err error) *Error {
	why := "it cannot be used"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "it does not exist"
	case errors.Is(err, fs.ErrPermission):
		why = "it is not writable"
	case err == nil || errors.Is(err, errNotDir):
		why = "it is not a directory"
		err = errNotDir
	}
	return &Error{File: dir,
		Message: fmt.Sprintf("the temporary directory (%s) cannot hold the kit's scratch directories: %s", tempDirSource(), why),
		Err:     err,
		Hint:    "point TMPDIR at an existing, writable directory (for example TMPDIR=/tmp), or create this one"}
}

var errNotDir = errors.New("not a directory")

// usableTempDir returns os.TempDir() when it is an existing directory, else a tempDirError.
func usableTempDir() (string, error) {
	dir := os.TempDir()
	st, err := os.Stat(dir)
	if err != nil {
		return "", tempDirError(dir, err)
	}
	if !st.IsDir() {
		return "", tempDirError(dir, errNotDir)
	}
	return dir, nil
}

// scratchDir creates a fresh directory in the temporary directory, or returns a tempDirError.
func scratchDir(pattern string) (string, error) {
	dir, err := usableTempDir()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", tempDirError(dir, err)
	}
	return tmp, nil
}
