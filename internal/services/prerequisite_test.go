package services

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestParseConsentControlAndScenario(t *testing.T) {
	raw, dir := parseTOML(t, `
[tool.astrabox.services.consent-store]
urls = ["https://consent.larkspur.example"]
run = "python3 fake.py --port {port}"
consent = { control = "put /__fake/consents/{principal}", body = '{"state": "{state}", "who": "{principal}"}', states = { granted = "GRANTED", pending = "AWAITING" } }

[tool.astrabox.services.idp]
urls = ["https://idp.larkspur.example"]
run = "python3 idp.py --port {port}"

[tool.astrabox.services.idp.consent]
scenario = "consent-{principal}"
states = { granted = "Started", pending = "awaiting-consent" }
`)
	specs, err := Parse(raw, "pyproject.toml", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := specs[0].Consent
	if c == nil || c.Form != FormControl || c.Method != "PUT" || c.Path != "/__fake/consents/{principal}" {
		t.Fatalf("consent-store consent = %+v", c)
	}
	got := c.Control(`al ice"`, PrerequisitePending)
	if got.Method != "PUT" || got.Path != "/__fake/consents/al%20ice%22" || string(got.Body) != `{"state": "AWAITING", "who": "al ice\""}` {
		t.Errorf("control = %s %s %s", got.Method, got.Path, got.Body)
	}
	s := specs[1].Consent
	if s == nil || s.Form != FormScenario {
		t.Fatalf("idp consent = %+v", s)
	}
	got = s.Control("bob", PrerequisiteGranted)
	if got.String() != "PUT /__admin/scenarios/consent-bob/state" || string(got.Body) != `{"state":"Started"}` {
		t.Errorf("scenario control = %s %s", got, got.Body)
	}
	if specs[1].Consent.Word(PrerequisitePending) != "awaiting-consent" {
		t.Errorf("pending word = %q", specs[1].Consent.Word(PrerequisitePending))
	}
	// Without states, the kit's own words are sent; a path may carry the state instead of a body.
	raw, dir = parseTOML(t, `
[tool.astrabox.services.c]
urls = ["https://c.example"]
run = "x {port}"
consent = { control = "POST /admin/consent/{principal}/{state}" }
`)
	specs, err = Parse(raw, "pyproject.toml", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := specs[0].Consent.Control("dave", PrerequisiteGranted); got.String() != "POST /admin/consent/dave/granted" || got.Body != nil {
		t.Errorf("plain control = %s %q", got, got.Body)
	}
}

func TestParseConsentErrorsNameTheKeyAndLine(t *testing.T) {
	head := "[tool.astrabox.services.a]\nurls = [\"https://a.example\"]\nrun = \"x {port}\"\n"
	cases := map[string]string{
		`consent = "PUT /c"`: "must be a table",
		`consent = { }`:      "needs control",
		`consent = { control = "PUT /c/{principal}/{state}", scenario = "c-{principal}" }`:    "not both",
		`consent = { control = "/c/{principal}/{state}" }`:                                    "must be \"METHOD /path\"",
		`consent = { control = "PUT c/{principal}/{state}" }`:                                 "must be \"METHOD /path\"",
		`consent = { control = "PUT /c/{principal}" }`:                                        "must name {principal} and {state}",
		`consent = { control = "PUT /c/{user}/{state}" }`:                                     "may use only {principal} and {state}",
		`consent = { scenario = "consent" }`:                                                  "must contain {principal}",
		`consent = { scenario = "c-{principal}-{state}" }`:                                    "may use only {principal}",
		`consent = { scenario = "c-{principal}", body = "x" }`:                                "body goes with control",
		`consent = { scenario = "c-{principal}", states = { revoked = "R" } }`:                "the states are granted and pending",
		`consent = { scenario = "c-{principal}", states = { granted = 1 } }`:                  "states.granted must be",
		`consent = { scenario = "c-{principal}", states = { granted = "A", pending = "A" } }`: "must be different words",
		`consent = { scenario = "c-{principal}", states = "x" }`:                              "states must be a table",
		`consent = { scenario = "c-{principal}", state = {} }`:                                "unknown key \"state\"",
		`consent = { control = 3 }`:                                                           "control must be a non-empty string",
	}
	for src, want := range cases {
		raw, dir := parseTOML(t, head+src+"\n")
		_, err := Parse(raw, "pyproject.toml", dir, func(k string) int {
			if k == "services.a.consent" {
				return 4
			}
			return 0
		})
		errs := Errors(err)
		if len(errs) != 1 || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "pyproject.toml:4: services.a.consent: ") {
			t.Errorf("%s\n  err = %v, want %q at pyproject.toml:4", src, err, want)
		}
	}
}

// FuzzParseConsent interprets a service's consent declaration from TOML text: any table ends in a
// Prerequisite or an *Error naming services.a.consent, never a panic; an accepted declaration gives, for any
// principal and state, a control request whose path starts with / and whose method is a token.
func FuzzParseConsent(f *testing.F) {
	f.Add(`consent = { control = "PUT /__fake/consents/{principal}", body = '{"state": "{state}"}' }`, "alice", "pending")
	f.Add(`consent = { scenario = "consent-{principal}", states = { granted = "Started", pending = "awaiting" } }`, "b/b", "granted")
	f.Add(`consent = { control = "POST /c/{principal}/{state}?x={state}", states = { pending = "P" } }`, "", "pending")
	f.Fuzz(func(t *testing.T, decl, principal, state string) {
		if len(decl) > 4<<10 {
			return
		}
		var doc map[string]any
		src := "[tool.astrabox.services.a]\nurls = [\"https://a.example\"]\nrun = \"x {port}\"\n" + decl + "\n"
		if _, err := toml.Decode(src, &doc); err != nil {
			return
		}
		tool, _ := doc["tool"].(map[string]any)
		astrabox, _ := tool["astrabox"].(map[string]any)
		specs, err := Parse(astrabox["services"], "pyproject.toml", t.TempDir(), nil)
		if err != nil {
			for _, e := range Errors(err) {
				if e.Msg == "" || !strings.HasPrefix(e.KeyPath(), "services.a") {
					t.Fatalf("error without its key: %#v", e)
				}
			}
			return
		}
		if c := specs[0].Consent; c != nil {
			got := c.Control(principal, state)
			if !strings.HasPrefix(got.Path, "/") || !validMethod(got.Method) {
				t.Fatalf("control %q from %s", got, decl)
			}
		}
	})
}
