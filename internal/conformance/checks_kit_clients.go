package conformance

import (
	"fmt"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the kit rules about the provider's client libraries: a TLS client that does not trust the
// run's certificate authority (KIT-TLS-TRUST), and the clients whose network code is C, which the egress
// rule reports as warnings (nativeClientWarnings).

// KitTLSTrust is the ID of the kit rule that fails a run whose provider's TLS client rejected the run's
// certificate authority on a declared service.
const KitTLSTrust = KitRulePrefix + "TLS-TRUST"

func init() {
	register(&Check{
		ID: KitTLSTrust, Title: "TLS clients trust the run's certificate authority (the kit's own rule)", Area: AreaGeneral, Severity: report.SeverityError,
		Kind:  KindKitRule,
		Needs: "a scenario run (every TLS handshake with a declared service in it is watched)", Exercise: exTLS, Judges: judgesAll,
		Rationale: "This is the kit's own rule, not a platform clause. The kit serves the provider's declared HTTPS services with a certificate authority made for the run, and names one bundle (that authority and the system's roots) in every variable a Python client reads: SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, AWS_CA_BUNDLE, GRPC_DEFAULT_SSL_ROOTS_FILE_PATH; certifi.where() answers it too. A client that verifies against a trust store of its own (a CA file fixed in code, verify= or ssl= given a file) rejects the run's certificate, and its callback then fails or retries until its deadline for a reason that has nothing to do with the platform. The run reports that as what it is, with the library and the trust store it read, and the callback's own checks are not failed for it.",
		Hint:      "Let the client use its default trust store, or read the CA file from the variable its library documents (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, AWS_CA_BUNDLE) instead of fixing a path in code; the kit points each at its bundle, and production keeps its own value.",
		Wrong:     "ctx = ssl.create_default_context(cafile=\"/etc/ssl/certs/corp-root.pem\")  # fixed in code: the run's CA is not in it",
		Right:     "ctx = ssl.create_default_context(cafile=os.environ.get(\"SSL_CERT_FILE\"))  # the deployment's bundle, or the run's",
		Decide:    decideKitTLSTrust,
	})
}

// exTLS is met when a scenario ran; a TLS failure is reported by any call that makes one.
func exTLS(ev *Evidence) Exercise {
	if len(ev.Histories) == 0 {
		return Exercise{Missing: "no scenario ran, so no TLS connection to a declared service was made"}
	}
	n := 0
	for _, cs := range ev.calls() {
		n += len(ev.allObservations(cs).TLS)
	}
	return Exercise{Met: true, Over: fmt.Sprintf("every TLS handshake with a declared service in %d scenario(s): %d rejected the run's certificate", len(ev.Histories), n)}
}

// tlsLibraryAdvice is what each client library reads for its trusted roots and what to do, by the top-level
// package the harness names ("" for the standard library's own clients).
var tlsLibraryAdvice = map[string]string{
	"botocore":  "botocore reads AWS_CA_BUNDLE (set by the kit) and otherwise certifi.where() (answered by the kit); a verify= argument or ca_bundle in the AWS config overrides both: leave verify unset, or pass verify=os.environ.get(\"AWS_CA_BUNDLE\")",
	"requests":  "requests reads REQUESTS_CA_BUNDLE (set by the kit) unless verify= names a file or the session's trust_env is False: leave verify=True, or pass verify=os.environ.get(\"REQUESTS_CA_BUNDLE\", True)",
	"httpx":     "httpx reads SSL_CERT_FILE (set by the kit) when trust_env is on, and otherwise certifi.where() (answered by the kit): do not give verify= a fixed file or a context loaded from one; pass verify=os.environ.get(\"SSL_CERT_FILE\", True)",
	"aiohttp":   "aiohttp verifies with ssl.create_default_context(), which reads SSL_CERT_FILE (set by the kit): do not give ssl= a context loaded from a fixed file; load os.environ.get(\"SSL_CERT_FILE\") into it",
	"grpc":      "grpc's core reads GRPC_DEFAULT_SSL_ROOTS_FILE_PATH (set by the kit) unless root_certificates= is given: leave it unset for a declared service",
	libraryNone: "Python's ssl module reads SSL_CERT_FILE (set by the kit) in ssl.create_default_context(); a context loaded from a fixed file (cafile=, load_verify_locations) does not hold the run's CA: load the file SSL_CERT_FILE names when it is set",
}

// libraryNone names the standard library's own clients (urllib, http.client, asyncio streams).
const libraryNone = "ssl"

// tlsLibraryAliases maps a package to the library whose trust settings it uses.
var tlsLibraryAliases = map[string]string{
	"boto3": "botocore", "aiobotocore": "botocore", "s3transfer": "botocore",
	"hvac": "requests", "requests_oauthlib": "requests", "urllib3": "requests",
	"httpcore": "httpx", "authlib": "httpx",
	"urllib": libraryNone, "http": libraryNone, "asyncio": libraryNone,
}

// tlsAdvice returns the advice for a library (the standard library's when it is unknown).
func tlsAdvice(lib string) string {
	if a, ok := tlsLibraryAliases[lib]; ok {
		lib = a
	}
	if a, ok := tlsLibraryAdvice[lib]; ok {
		return a
	}
	return tlsLibraryAdvice[libraryNone]
}

// tlsMessage says who failed to verify which host against what.
func tlsMessage(who string, f harness.TLSFailure) string {
	lib := f.Library
	if lib == "" {
		lib = libraryNone
	}
	trust := "no trust store"
	if len(f.Trust) > 0 {
		trust = strings.Join(f.Trust, " and ")
	}
	loaded := ""
	if f.ContextLibrary != "" && f.ContextLibrary != lib {
		loaded = " (loaded by " + f.ContextLibrary + ")"
	}
	held := "which does not hold the run's certificate authority"
	if f.RunCA {
		held = "which holds the run's certificate authority, yet verification failed"
	}
	return fmt.Sprintf("%s: %s rejected the certificate of the declared service %s: it verified against %s%s, %s (%s); %s",
		who, lib, f.Host, trust, loaded, held, truncateText(f.Message, 200), tlsAdvice(lib))
}

// tlsFailed tells whether a call (or work it left) had a TLS handshake with a declared service fail.
func (ev *Evidence) tlsFailed(cs callSite) bool { return len(ev.allObservations(cs).TLS) > 0 }

func decideKitTLSTrust(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls() {
		for _, f := range ev.allObservations(cs).TLS {
			key := string(cs.c.Method) + "|" + f.Host + "|" + f.Library + "|" + strings.Join(f.Trust, ",")
			if seen[key] {
				continue
			}
			seen[key] = true
			loc := at(f.File, f.Line)
			if loc == nil {
				loc = ev.methodLocation(cs.c.Method)
			}
			msg := tlsMessage(string(cs.c.Method), f)
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		}
	}
	return out
}

// nativeClientWarnings are the warnings of KIT-EGRESS-UNDECLARED for each client whose network code is C that
// the provider loaded (once per module): the kit cannot see its lookups and connections as it sees Python's.
func nativeClientWarnings(ev *Evidence) []Finding {
	first := map[string]string{}
	var mods []string
	note := func(n harness.NativeClient, who string) {
		if _, ok := first[n.Module]; !ok {
			first[n.Module] = who
			mods = append(mods, n.Module)
		}
	}
	libs := map[string]string{}
	for _, h := range ev.Histories {
		for _, e := range h.Events {
			switch {
			case e.Call != nil:
				for _, n := range e.Call.Observations.Native {
					note(n, string(e.Call.Method))
					libs[n.Module] = n.Library
				}
			case e.Kind == simulate.EventBackground && e.Background != nil:
				for _, n := range e.Background.Native {
					note(n, "work left running on replica "+e.Replica+" reported")
					libs[n.Module] = n.Library
				}
			}
		}
	}
	sort.Strings(mods)
	var out []Finding
	for _, m := range mods {
		msg := fmt.Sprintf("the provider's process used %s (%s) by the end of %s: its lookups and connections are made in C, below the kit's socket hooks; %s",
			m, libs[m], first[m], nativeClientEffect(m))
		out = append(out, Finding{Warning: true, Message: msg, Evidence: []report.Evidence{{Text: msg}}})
	}
	return out
}

// nativeClientEffect says what the kit can and cannot do about a C-level client.
func nativeClientEffect(module string) string {
	switch {
	case strings.HasPrefix(module, "grpc"):
		return "grpc honours the proxy variables the kit sets (grpc_proxy, https_proxy), so a channel to an undeclared host is refused at the egress proxy, but its requests are not attributed to callbacks and the kit's proxy does not speak HTTP/2 to a declared service; give the channel's target as a declared service only with a fake the test reaches over HTTP/1.1, or keep grpc out of the provider's callbacks"
	case strings.HasPrefix(module, "pycares"):
		return "c-ares sends its own DNS queries to the system's resolvers, so name lookups bypass the kit's routing (a declared host does not resolve to its stand-in and an undeclared one is not refused at lookup; the connection that follows is still refused); use the default resolver (aiohttp's ThreadedResolver, or no aiodns) in the provider"
	default:
		return "its connections bypass the kit's routing and refusal; keep it out of the provider's callbacks or make sure it reaches no network during a run"
	}
}
