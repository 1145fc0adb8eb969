package term

import (
	"bytes"
	"io"
	"os"
)

// IO is the bundle of streams a command uses, with colour, terminal and width decided once. Data goes to Out,
// status and diagnostics to Err.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// ColorOut and ColorErr say whether to colour Out and Err.
	ColorOut, ColorErr bool
	// OutTTY and ErrTTY say whether Out and Err are terminals.
	OutTTY, ErrTTY bool
	// Width is the number of columns to wrap Out to.
	Width int
	// ErrWidth is the number of columns of Err (progress lines are fitted to it); 0 means DefaultWidth.
	ErrWidth int
}

// System returns the bundle of the process's standard streams, with colour decided by DetectColor from the
// environment and the width of standard output (DefaultWidth when it is not a terminal).
func System() *IO {
	outTTY := IsTerminal(os.Stdout)
	errTTY := IsTerminal(os.Stderr)
	return &IO{
		In:       os.Stdin,
		Out:      os.Stdout,
		Err:      os.Stderr,
		ColorOut: DetectColor(os.Getenv, outTTY),
		ColorErr: DetectColor(os.Getenv, errTTY),
		OutTTY:   outTTY,
		ErrTTY:   errTTY,
		Width:    Width(os.Stdout),
		ErrWidth: Width(os.Stderr),
	}
}

// Test returns a bundle for tests: empty input, output and errors captured in the returned buffers, no colour,
// no terminal, DefaultWidth columns.
func Test() (*IO, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &IO{
		In:    &bytes.Buffer{},
		Out:   out,
		Err:   errOut,
		Width: DefaultWidth,
	}, out, errOut
}

// OutStyles returns the styles for Out.
func (s *IO) OutStyles() Styles { return NewStyles(s.ColorOut) }

// ErrStyles returns the styles for Err.
func (s *IO) ErrStyles() Styles { return NewStyles(s.ColorErr) }
