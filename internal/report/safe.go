package report

// SafeText makes text that may come from a provider safe to print, as the text report does: control
// characters other than newline become visible escapes (\x1b), tabs become spaces, carriage returns go.
func SafeText(s string) string { return sanitize(s) }
