package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParseSettings decodes TOML text and interprets its [tool.astrabox] table (or, as in astrabox.toml, the
// whole document). Any table ends in settings or a SettingsError that names its key, never a panic; accepted
// deadlines are finite, positive and bounded.
func FuzzParseSettings(f *testing.F) {
	f.Add("[tool.astrabox]\nreplicas = 3\nseed = 7\ndeadlines = { turn = 2.5, session = 10 }\nlimits = { memory-mb = 512, open-files = 64 }\nskip = { LEAK-LOG = \"why\" }\n")
	f.Add("[tool.astrabox]\nconfig = { secrets = { model_api_key = \"\" }, agent = { model = \"m\" } }\nsecret-fields = [\"deployment.client_secret\"]\n")
	f.Add("[tool.astrabox]\ndeadlines = { turn = nan, plan = inf, recover = -1e300 }\n")
	f.Add("[tool.astrabox]\nconfig.secrets = 3\n")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 8<<10 || strings.Count(src, "{")+strings.Count(src, "[") > 200 {
			return // the decoder's own limits are discovery's to enforce (see FuzzDiscovery*)
		}
		var doc map[string]any
		if _, err := toml.Decode(src, &doc); err != nil {
			return
		}
		raw := doc
		if tool, ok := doc["tool"].(map[string]any); ok {
			if a, ok := tool["astrabox"].(map[string]any); ok {
				raw = a
			}
		}
		s, err := ParseSettings(raw, "", t.TempDir())
		if err != nil {
			var se *SettingsError
			if !errors.As(err, &se) || se.Key == "" || se.Msg == "" {
				t.Fatalf("not a SettingsError naming its key: %#v", err)
			}
			return
		}
		for _, d := range []float64{s.Deadlines.Plan, s.Deadlines.Synchronize, s.Deadlines.Recover, s.Deadlines.Session, s.Deadlines.Turn, s.Deadlines.UserAction} {
			if d != 0 && !(d > 0 && d <= 30*24*3600) {
				t.Fatalf("accepted deadline %v", d)
			}
		}
		if sec, ok := s.Config["secrets"]; ok {
			if _, ok := sec.(map[string]any); !ok {
				t.Fatalf("accepted config.secrets %s", fmt.Sprint(sec))
			}
		}
	})
}
