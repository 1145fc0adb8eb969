package term

import (
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles holds every lipgloss style the kit draws with. Build it with NewStyles; with colour off every style is
// plain and renders its text unchanged, without any escape sequence.
type Styles struct {
	// Color says whether these styles emit colour and attributes.
	Color bool

	Pass     lipgloss.Style // a passed check
	Fail     lipgloss.Style // a failed check
	Warn     lipgloss.Style // a warning
	Skip     lipgloss.Style // a skipped check
	Flaky    lipgloss.Style // a check whose outcome changed between runs
	Heading  lipgloss.Style // section headings
	Dim      lipgloss.Style // secondary text: hints, counts, labels
	Code     lipgloss.Style // code, commands and identifiers from the provider
	ID       lipgloss.Style // check and clause IDs
	Location lipgloss.Style // path:line locations in the provider's source
}

// Adaptive colours: the first value is for light backgrounds, the second for dark ones.
var (
	colorPass     = lipgloss.AdaptiveColor{Light: "#1A7F37", Dark: "#3FB950"}
	colorFail     = lipgloss.AdaptiveColor{Light: "#CF222E", Dark: "#F85149"}
	colorWarn     = lipgloss.AdaptiveColor{Light: "#9A6700", Dark: "#D29922"}
	colorSkip     = lipgloss.AdaptiveColor{Light: "#6E7781", Dark: "#8B949E"}
	colorFlaky    = lipgloss.AdaptiveColor{Light: "#8250DF", Dark: "#BC8CFF"}
	colorHeading  = lipgloss.AdaptiveColor{Light: "#0550AE", Dark: "#79C0FF"}
	colorDim      = lipgloss.AdaptiveColor{Light: "#57606A", Dark: "#8B949E"}
	colorCode     = lipgloss.AdaptiveColor{Light: "#953800", Dark: "#FFA657"}
	colorID       = lipgloss.AdaptiveColor{Light: "#24292F", Dark: "#E6EDF3"}
	colorLocation = lipgloss.AdaptiveColor{Light: "#0969DA", Dark: "#58A6FF"}
)

// NewStyles builds the kit's styles. With color false every style is plain: rendering returns the text as is.
// With color true the styles use adaptive colours, degraded to what the terminal on standard output supports
// and to 256 colours when that cannot be detected (colour forced into a pipe or a CI log).
func NewStyles(color bool) Styles {
	if !color {
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.Ascii)
		plain := r.NewStyle()
		return Styles{
			Pass: plain, Fail: plain, Warn: plain, Skip: plain, Flaky: plain,
			Heading: plain, Dim: plain, Code: plain, ID: plain, Location: plain,
		}
	}
	r := lipgloss.NewRenderer(os.Stdout)
	if r.ColorProfile() == termenv.Ascii {
		r.SetColorProfile(termenv.ANSI256)
	}
	return Styles{
		Color:   true,
		Pass:    r.NewStyle().Foreground(colorPass).Bold(true),
		Fail:    r.NewStyle().Foreground(colorFail).Bold(true),
		Warn:    r.NewStyle().Foreground(colorWarn).Bold(true),
		Skip:    r.NewStyle().Foreground(colorSkip),
		Flaky:   r.NewStyle().Foreground(colorFlaky).Bold(true),
		Heading: r.NewStyle().Foreground(colorHeading).Bold(true),
		Dim:     r.NewStyle().Foreground(colorDim),
		Code:    r.NewStyle().Foreground(colorCode),
		ID:      r.NewStyle().Foreground(colorID).Bold(true),
		// No underline: lipgloss underlines rune by rune (one escape sequence per character), which breaks a
		// grep for the path in a coloured log and more than doubles its size.
		Location: r.NewStyle().Foreground(colorLocation),
	}
}
