package simulate

import (
	"bytes"
	"errors"
	"strings"
)

// opOrder is the order of the ops in the op table of docs/scenarios.md and in the explore generator's draw
// (Generated lays their weights out in it): the platform's lifecycle, then the clock, user actions,
// recovery, hosts, configuration and consent. A registered op it does not name comes after those it names,
// by name (Registered), so a new op needs no entry here; TestOpRegistryComplete fails for a name here that
// is not registered. Reordering it, or adding a generated op anywhere, changes every scenario the generator
// makes of a seed, which internal/explore's TestGeneratedScenariosAreStable pins.
var opOrder = []string{OpPrewarm, OpColdStart, OpClaim, OpTurn, OpRetry, OpReattach, OpReplaceSandbox,
	OpRefreshInputs, OpAdvance, OpReadUserActions, OpPerformUserAction, OpRecover, OpRelease, OpHostLoss,
	OpConfigChange, OpSetConsent}

// The markers between which docs/scenarios.md holds the generated op table.
const (
	OpsTableBegin = "<!-- BEGIN op table: generated from internal/simulate's op registry by `go run ./internal/tools/gendocs`; do not edit -->"
	OpsTableEnd   = "<!-- END op table -->"
)

// OpsTable renders the op table of docs/scenarios.md from the registry.
func OpsTable() string {
	var b strings.Builder
	b.WriteString("| op | required | optional | what happens |\n| --- | --- | --- | --- |\n")
	cell := func(fields []string, notes map[string]string) string {
		if len(fields) == 0 {
			return " |"
		}
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = "`" + f + "`"
			if n := notes[f]; n != "" {
				parts[i] += " (" + n + ")"
			}
		}
		return " " + strings.Join(parts, ", ") + " |"
	}
	for _, s := range orderedSpecs() {
		b.WriteString("| `" + s.name + "` |" + cell(s.required, s.notes) + cell(s.allowed, s.notes) + " " + s.doc + " |\n")
	}
	return b.String()
}

// ReplaceOpsTable returns doc with the text between its op table markers replaced by OpsTable.
func ReplaceOpsTable(doc []byte) ([]byte, error) {
	i := bytes.Index(doc, []byte(OpsTableBegin))
	j := bytes.Index(doc, []byte(OpsTableEnd))
	if i < 0 || j < i {
		return nil, errors.New("docs/scenarios.md: the op table markers are missing or out of order; put " + OpsTableBegin + " and " + OpsTableEnd + " around the table")
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(OpsTableBegin)])
	out.WriteString("\n" + OpsTable())
	out.Write(doc[j:])
	return out.Bytes(), nil
}
