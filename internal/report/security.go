package report

// securityRule is how GitHub code scanning should class a check's findings as security alerts: its
// security-severity (GitHub: 9.0 and over critical, 7.0 high, 4.0 medium) and the CWE it is an instance of.
type securityRule struct {
	severity string
	cwe      string
}

// AreaSecrets is the area of the checks that judge whether a secret leaks (LEAK-*).
const AreaSecrets = "secrets"

// securityRules are the checks outside the secrets area that also judge secret handling, and those of the
// secrets area whose CWE is more precise than the area's.
var securityRules = map[string]securityRule{
	"LEAK-CROSS-SESSION": {"9.0", "external/cwe/cwe-200"},
	"LEAK-LOG":           {"8.0", "external/cwe/cwe-532"},
	"LEAK-ERROR":         {"8.0", "external/cwe/cwe-209"},
	"SESSION-REDACTION":  {"8.0", "external/cwe/cwe-209"},
	"SYNC-NO-LOG-CONFIG": {"5.0", "external/cwe/cwe-532"},
}

// securityOf says whether res's check judges secret handling, and how severe a breach is: the checks of the
// secrets area (high, CWE-200 unless listed) and the listed ones.
func securityOf(res *Result) (securityRule, bool) {
	if s, ok := securityRules[res.Check]; ok {
		return s, true
	}
	if res.Area == AreaSecrets {
		return securityRule{"8.0", "external/cwe/cwe-200"}, true
	}
	return securityRule{}, false
}
