package cli

import (
	"regexp"

	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// kitSecret matches the shape of every secret the kit makes (configuration canaries, workload identity tokens
// and the double's credentials), whether or not this process planted it.
var kitSecret = regexp.MustCompile(`astx_(?:canary|wid|cred)_[-0-9A-Za-z_]+`)

// errorText makes an error message safe to print or to write into a report: anything shaped like a kit
// secret is masked, and then safeErrorText makes the text safe for a terminal and a CI log. The secrets of
// a run, in every encoding the kit hunts, were masked by the run that returned the error (conformance masks
// its errors with the run's own set: a load error can carry a canary the provider stashed in an earlier
// callback); no set of secrets is held process-wide.
func errorText(msg string) string {
	msg = kitSecret.ReplaceAllString(msg, secrets.Marker("raw"))
	return safeErrorText(msg)
}
