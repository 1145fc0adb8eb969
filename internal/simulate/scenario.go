package simulate

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scenario is one lifecycle sequence the platform plays against a provider: who exists (principals, Agents),
// how the platform is shaped (replicas, engine adapter, sandbox backend) and the steps in order. Scenarios are
// data: they are written as YAML (docs/scenarios.md), generated, shrunk and replayed.
type Scenario struct {
	Name        string               `yaml:"name" json:"name"`
	Description string               `yaml:"description,omitempty" json:"description,omitempty"`
	Seed        int64                `yaml:"seed,omitempty" json:"seed"`
	Replicas    int                  `yaml:"replicas,omitempty" json:"replicas"`
	Engine      string               `yaml:"engine,omitempty" json:"engine"`
	Backend     *Backend             `yaml:"backend,omitempty" json:"backend,omitempty"`
	Config      map[string]any       `yaml:"config,omitempty" json:"config,omitempty"`
	Principals  map[string]Principal `yaml:"principals,omitempty" json:"principals,omitempty"`
	Agents      []AgentSpec          `yaml:"agents,omitempty" json:"agents,omitempty"`
	Deadlines   *Deadlines           `yaml:"deadlines,omitempty" json:"deadlines,omitempty"`
	Steps       []Step               `yaml:"steps" json:"steps"`

	// File is where the scenario was read from, if anywhere.
	File string `yaml:"-" json:"-"`
	// keyLines are the lines of the top-level keys of the file, for errors.
	keyLines map[string]int
}

// lineOf is the line of a top-level key in the scenario's file (1 when unknown).
func (s *Scenario) lineOf(key string) int {
	if l := s.keyLines[key]; l > 0 {
		return l
	}
	return 1
}

// Backend declares the sandbox backend's capabilities (TURN-BACKEND).
type Backend struct {
	ProfileExclusive bool `yaml:"profile_exclusive" json:"profile_exclusive"`
	OwnsSandbox      bool `yaml:"owns_sandbox" json:"owns_sandbox"`
}

// Principal is a user of the deployment and the consent state the double reports for them.
type Principal struct {
	Consent string `yaml:"consent,omitempty" json:"consent,omitempty"` // granted (default) or pending
	// ConsentOnCheck is the state a consent check moves the principal to (the user completed consent
	// elsewhere); empty means unchanged.
	ConsentOnCheck string `yaml:"consent_on_check,omitempty" json:"consent_on_check,omitempty"`
}

// AgentSpec declares an Agent of the scenario.
type AgentSpec struct {
	ID      string `yaml:"id" json:"id"`
	Creator string `yaml:"creator,omitempty" json:"creator,omitempty"`
	Version int    `yaml:"version,omitempty" json:"version,omitempty"`
}

// Deadlines are the wall-clock budgets, in seconds, the platform gives each callback.
type Deadlines struct {
	Synchronize float64 `yaml:"synchronize,omitempty" json:"synchronize,omitempty"`
	Recover     float64 `yaml:"recover,omitempty" json:"recover,omitempty"`
	Session     float64 `yaml:"session,omitempty" json:"session,omitempty"`
	Turn        float64 `yaml:"turn,omitempty" json:"turn,omitempty"`
	UserAction  float64 `yaml:"user_action,omitempty" json:"user_action,omitempty"`
	Plan        float64 `yaml:"plan,omitempty" json:"plan,omitempty"`
	// OperationLease is how long (host-clock seconds) an unresolved synchronize operation may be recovered.
	OperationLease float64 `yaml:"operation_lease,omitempty" json:"operation_lease,omitempty"`
}

// Step is one thing the platform does. Op selects the step; the other fields are its arguments.
type Step struct {
	Op        string  `yaml:"op" json:"op"`
	Replica   string  `yaml:"replica,omitempty" json:"replica,omitempty"`
	Agent     string  `yaml:"agent,omitempty" json:"agent,omitempty"`
	Session   string  `yaml:"session,omitempty" json:"session,omitempty"`
	Principal string  `yaml:"principal,omitempty" json:"principal,omitempty"`
	Attempt   string  `yaml:"attempt,omitempty" json:"attempt,omitempty"`
	Operation string  `yaml:"operation,omitempty" json:"operation,omitempty"`
	Action    string  `yaml:"action,omitempty" json:"action,omitempty"`
	Boxes     int     `yaml:"boxes,omitempty" json:"boxes,omitempty"`
	Seconds   float64 `yaml:"seconds,omitempty" json:"seconds,omitempty"`
	LiveFor   LiveFor `yaml:"live_for,omitempty" json:"live_for,omitzero"`
	Images    int     `yaml:"images,omitempty" json:"images,omitempty"`
	Scope     string  `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Consent is the new consent state of a set_consent step.
	Consent string `yaml:"consent,omitempty" json:"consent,omitempty"`
	// Via says how a turn is sent: "api" (default: straight to the host) or "console" (the console blocks
	// sending while a prerequisite is unknown or pending).
	Via    string        `yaml:"via,omitempty" json:"via,omitempty"`
	Fault  *Fault        `yaml:"fault,omitempty" json:"fault,omitempty"`
	Double []DoubleFault `yaml:"double,omitempty" json:"double,omitempty"`

	// Line is the step's line in its YAML file.
	Line int `yaml:"-" json:"-"`
	// zeros are the fields the step's YAML mapping gave their zero value (`boxes: 0`, `double: []`), the one
	// presence its values cannot show (see has); nil when there are none.
	zeros map[string]bool
}

// Fault is something that goes wrong with the callback a step makes.
type Fault struct {
	// Kind is timeout (the deadline is cut to After seconds), cancel (the platform cancels the callback
	// After seconds in), or host_loss (the replica process is killed: when a double request is held, or After
	// seconds in).
	Kind  string  `yaml:"kind" json:"kind"`
	After float64 `yaml:"after,omitempty" json:"after,omitempty"`
	// On, for cancel, is "request" (CancelOnRequest): the platform cancels the callback as soon as one of
	// its requests reaches the double or a declared service (so that the cancellation meets it in flight),
	// or After seconds in if none comes first; or "write" (CancelOnWrite): the platform cancels it when its
	// first write arrives, and that write is held, neither applied nor answered, until the callback has
	// answered the cancel or is seen waiting (every thread of its process asleep), so that the
	// window between a write sent and its answer is met every run.
	On string `yaml:"on,omitempty" json:"on,omitempty"`
	// Change is what the supersede fault changes while synchronize runs: refresh (the default: a new refresh
	// revision), version (a new authored version), pool (a new pool lifetime) or generation (a new runtime
	// generation).
	Change string `yaml:"change,omitempty" json:"change,omitempty"`
}

// DoubleFault is a fault the deployment double applies to matching requests during a step.
type DoubleFault struct {
	Kind   string  `yaml:"kind" json:"kind"` // delay, hold, unavailable, drop
	Method string  `yaml:"method,omitempty" json:"method,omitempty"`
	Path   string  `yaml:"path,omitempty" json:"path,omitempty"`
	Delay  float64 `yaml:"delay,omitempty" json:"delay,omitempty"`
	Times  int     `yaml:"times,omitempty" json:"times,omitempty"`
	// Label names a held request so that a later release step can release it.
	Label string `yaml:"label,omitempty" json:"label,omitempty"`
	// Write, when set, makes the fault act on the step's Nth write (PUT, POST or DELETE) only, of any path
	// unless Method and Path narrow it, and on Times writes from there (default 1); FillEach repeats the step
	// once per write position.
	Write Position `yaml:"write,omitempty" json:"write,omitzero"`
}

// The steps a scenario may use.
const (
	OpPrewarm           = "prewarm"
	OpClaim             = "claim"
	OpColdStart         = "cold_start"
	OpReattach          = "reattach"
	OpReplaceSandbox    = "replace_sandbox"
	OpTurn              = "turn"
	OpRetry             = "retry"
	OpAdvance           = "advance"
	OpReadUserActions   = "read_user_actions"
	OpPerformUserAction = "perform_user_action"
	OpRecover           = "recover"
	OpRelease           = "release"
	OpHostLoss          = "host_loss"
	OpConfigChange      = "config_change"
	OpRefreshInputs     = "refresh_inputs"
	OpSetConsent        = "set_consent"
)

// ScenarioError is a problem in a scenario file, with its place.
type ScenarioError struct {
	File string
	Line int
	Msg  string
}

func (e *ScenarioError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("scenario line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// LoadScenario reads and validates a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return ParseScenario(path, data)
}

// ParseScenario decodes and validates a scenario; errors name the file and line.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		se := yamlError(file, err, nil).(*ScenarioError)
		if l := firstBadLine(data); l > 0 {
			se.Line = l
		}
		se.Msg = "YAML syntax error: " + se.Msg + " (check the indentation, colons and brackets here; tabs are not allowed)"
		return nil, se
	}
	if len(root.Content) == 0 {
		return nil, &ScenarioError{File: file, Line: 1, Msg: "the file is empty; a scenario needs at least `name` and `steps`"}
	}
	if n := localTag(&root); n != nil {
		return nil, &ScenarioError{File: file, Line: n.Line, Msg: fmt.Sprintf("YAML tag %s is not supported in a scenario; write the plain value", n.Tag)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return nil, yamlError(file, err, &root)
	}
	s.File = file
	// A description is prose: leading blank lines (a folded scalar that starts with one) carry nothing, and
	// YAML cannot write a string that starts with a line break back as it read it (FuzzParseScenario).
	s.Description = strings.TrimLeft(s.Description, "\n")
	// Attach line numbers to steps.
	doc := root.Content[0]
	if doc.Kind == yaml.MappingNode {
		s.keyLines = map[string]int{}
		for i := 0; i+1 < len(doc.Content); i += 2 {
			s.keyLines[doc.Content[i].Value] = doc.Content[i].Line
			if doc.Content[i].Value == "deadlines" && doc.Content[i+1].Kind == yaml.MappingNode {
				dl := doc.Content[i+1]
				for j := 0; j+1 < len(dl.Content); j += 2 {
					s.keyLines["deadlines."+dl.Content[j].Value] = dl.Content[j].Line
				}
			}
			if doc.Content[i].Value == "steps" && doc.Content[i+1].Kind == yaml.SequenceNode {
				for j, n := range doc.Content[i+1].Content {
					if j < len(s.Steps) {
						s.Steps[j].Line = n.Line
						s.Steps[j].presentFields(n)
					}
				}
			}
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

var (
	yamlLeadingLine = regexp.MustCompile(`^line (\d+): `)
	yamlTypeError   = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `([^`]*)`)? into (\\S+)$")
	yamlUnknown     = regexp.MustCompile(`^field (\S+) not found in type simulate\.(\w+)$`)
)

// yamlError turns a yaml.v3 error into a ScenarioError: the first problem only, at its line, in words that say
// what to write instead. root, when the document parsed, is used to name the field of a type error.
func yamlError(file string, err error, root *yaml.Node) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	msg = strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0]) // the first of several unmarshal errors
	line := 1
	if m := yamlLeadingLine.FindStringSubmatch(msg); m != nil {
		fmt.Sscanf(m[1], "%d", &line)
		msg = msg[len(m[0]):]
	}
	if m := yamlUnknown.FindStringSubmatch(msg); m != nil {
		where := "at the top level"
		switch m[2] {
		case "Step":
			where = "in a step"
		case "Scenario":
		default:
			where = "in " + strings.ToLower(m[2])
		}
		msg = fmt.Sprintf("unknown field `%s` %s; see docs/scenarios.md for the fields of each op", m[1], where)
	} else if m := yamlTypeError.FindStringSubmatch(msg); m != nil {
		got := map[string]string{"!!str": "text", "!!int": "a number", "!!float": "a number", "!!bool": "true or false",
			"!!seq": "a list", "!!map": "a mapping", "!!null": "empty"}[m[1]]
		if got == "" {
			got = m[1]
		}
		if m[2] != "" {
			got = fmt.Sprintf("`%s` (%s)", m[2], got)
		}
		want := "a mapping"
		switch {
		case (m[3] == "int" || m[3] == "int64") && m[1] == "!!float":
			got = fmt.Sprintf("`%s` (a number that is not a whole number, or too large for one)", m[2])
			want = "a whole number from -9223372036854775808 to 9223372036854775807"
		case m[3] == "int" || m[3] == "int64" || m[3] == "float64":
			want = "a number"
		case m[3] == "bool":
			want = "true or false"
		case m[3] == "string":
			want = "text"
		case strings.HasPrefix(m[3], "[]"):
			want = "a list"
		}
		if m[3] == "simulate.Scenario" && line == 1 {
			msg = fmt.Sprintf("the document is %s; a scenario is a mapping with at least `name` and `steps`", got)
		} else if m[3] == "simulate.Step" {
			msg = fmt.Sprintf("a step is %s; each step must be a mapping such as `{op: cold_start, session: s1, agent: agent-1, principal: alice}`", got)
		} else if key := keyAtLine(root, line, m[1], m[2]); key != "" {
			msg = fmt.Sprintf("`%s` is %s, but it must be %s", key, got, want)
		} else {
			msg = fmt.Sprintf("%s where %s is expected", got, want)
		}
	}
	return &ScenarioError{File: file, Line: line, Msg: msg}
}

// firstBadLine returns the first line at which the document stops being valid YAML: yaml.v3 reports where the
// enclosing construct began, which is often a line or more too early. 0 when no prefix fails.
func firstBadLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var prefix []byte
	for i, l := range lines {
		prefix = append(prefix, l...)
		var n yaml.Node
		if yaml.Unmarshal(prefix, &n) != nil {
			return i + 1
		}
	}
	return 0
}

// keyAtLine returns the mapping key whose value starts on line and looks like the value yaml refused (the
// scalar text, or a node of the tag's kind), or "".
func keyAtLine(n *yaml.Node, line int, tag, value string) string {
	if n == nil {
		return ""
	}
	kind := map[string]yaml.Kind{"!!map": yaml.MappingNode, "!!seq": yaml.SequenceNode}[tag]
	if kind == 0 {
		kind = yaml.ScalarNode
	}
	value = strings.TrimSuffix(value, "...")
	found := ""
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if found != "" {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				v := n.Content[i+1]
				if v.Line == line && v.Kind == kind && (kind != yaml.ScalarNode || strings.HasPrefix(v.Value, value)) {
					found = n.Content[i].Value
					return
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return found
}

// localTag returns the first node under n written with an application tag (`!name`, as opposed to the
// standard `!!str` family): a scenario has no use for one, and yaml.v3 would give its value to a field as a
// plain string that the scenario's own YAML then writes without the tag.
func localTag(n *yaml.Node) *yaml.Node {
	if n.Style&yaml.TaggedStyle != 0 && !strings.HasPrefix(n.Tag, "!!") {
		return n
	}
	for _, c := range n.Content {
		if t := localTag(c); t != nil {
			return t
		}
	}
	return nil
}

// presentFields records which fields of the step's YAML mapping n are given as zero values; a field given no
// value (`agent:`) is absent, as YAML() would write it.
func (st *Step) presentFields(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if v := n.Content[i+1]; v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue
		}
		name := n.Content[i].Value
		f, ok := stepFieldIndex[name]
		if !ok {
			continue
		}
		// An empty string names nothing (no agent, no session): it is absent, as YAML() writes it, so a
		// required one is reported missing instead of passing here and failing on the way back.
		if fv := reflect.ValueOf(st).Elem().Field(f); fv.Kind() == reflect.String && fv.Len() == 0 {
			continue
		}
		if isZeroField(reflect.ValueOf(st).Elem().Field(f)) {
			if st.zeros == nil {
				st.zeros = map[string]bool{}
			}
			st.zeros[name] = true
		}
	}
}

// The values of a cancel fault's On.
const (
	CancelOnRequest = "request"
	CancelOnWrite   = "write"
)

// The callback faults a step may carry.
const (
	FaultTimeout  = "timeout"
	FaultCancel   = "cancel"
	FaultHostLoss = "host_loss"
	// FaultSupersede: another replica updates the Agent (a new refresh revision) while the callback runs.
	FaultSupersede = "supersede"
)

// Step's fields by YAML name: stepFieldNames in Step's order, stepFieldIndex to each one's struct field.
var stepFieldNames, stepFieldIndex = func() ([]string, map[string]int) {
	var names []string
	index := map[string]int{}
	t := reflect.TypeOf(Step{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			names = append(names, name)
			index[name] = i
		}
	}
	return names, index
}()

// isZeroField tells whether a field of Step holds nothing: its zero value, or an empty list.
func isZeroField(v reflect.Value) bool {
	if v.Kind() == reflect.Slice {
		return v.Len() == 0
	}
	return v.IsZero()
}

// has tells whether the step has a field: derived from the step itself, a field it holds a value in, or one
// its YAML gave as a zero value (zeros). So an edit (the shrinker removing a fault or simplifying a value)
// never leaves the presence stale: a field set to its zero value is absent unless the file said it.
func (st *Step) has(field string) bool {
	f, ok := stepFieldIndex[field]
	if !ok {
		return false
	}
	return !isZeroField(reflect.ValueOf(st).Elem().Field(f)) || st.zeros[field]
}

// fields returns the fields the step has (see has), in Step's order.
func (st *Step) fields() []string {
	var out []string
	for _, name := range stepFieldNames {
		if st.has(name) {
			out = append(out, name)
		}
	}
	return out
}

func (d *Deadlines) fill() {
	def := func(v *float64, x float64) {
		if *v <= 0 {
			*v = x
		}
	}
	def(&d.Plan, 5)
	def(&d.Synchronize, 5)
	def(&d.Recover, 5)
	def(&d.Session, 5)
	def(&d.Turn, 3)
	def(&d.UserAction, 3)
	def(&d.OperationLease, 600)
}

func replicaIndex(name string, n int) int {
	i, ok := ParseReplica(name)
	if !ok || i > n {
		return -1
	}
	return i - 1
}

// YAML writes the scenario back as YAML (used for saved failures and replays).
func (s *Scenario) YAML() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode scenario: %w", err)
	}
	return buf.Bytes(), nil
}

// Clone returns a deep copy of the scenario: steps, faults, principals, Agents, deadlines and configuration.
func (s *Scenario) Clone() *Scenario {
	c := *s
	if s.Backend != nil {
		b := *s.Backend
		c.Backend = &b
	}
	if s.Deadlines != nil {
		d := *s.Deadlines
		c.Deadlines = &d
	}
	if s.Config != nil {
		c.Config = CopyMap(s.Config)
	}
	if s.Principals != nil {
		c.Principals = make(map[string]Principal, len(s.Principals))
		for k, v := range s.Principals {
			c.Principals[k] = v
		}
	}
	c.Agents = append([]AgentSpec(nil), s.Agents...)
	c.Steps = make([]Step, len(s.Steps))
	for i, st := range s.Steps {
		c.Steps[i] = st.Clone()
	}
	return &c
}
