package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// SARIF version and schema written by the SARIF renderer.
const (
	SARIFVersion = "2.1.0"
	SARIFSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	// InformationURI is the kit's home page, named in SARIF output.
	InformationURI = "https://github.com/astrabox-dev/astrabox"
	// FingerprintKey names the astrabox fingerprint in SARIF partialFingerprints.
	FingerprintKey = "astraboxFingerprint/v1"
	// SrcRoot is the uriBaseId of every location in SARIF output.
	SrcRoot = "%SRCROOT%"
	// ChecksDocURI is the page that documents every check, one section per check ID (rules' helpUri).
	ChecksDocURI = InformationURI + "/blob/main/docs/checks.md"
)

// SARIF renders the report as SARIF 2.1.0 for GitHub code scanning and other SARIF viewers. Every check of
// the report becomes a rule (with a helpUri into docs/checks.md, and security-severity and the security tag
// on the rules that judge secret handling); every failed, flaky or warning check becomes a result of kind
// fail, a not_exercised check one of kind open and a not_applicable check one of kind notApplicable (both
// level none); passed and skipped checks are not results. Locations are relative to Root with uriBaseId
// %SRCROOT%; a result without a location inside Root points at the file that declares the provider
// (pyproject.toml or setup.cfg, at the declaration's line), because code scanning drops results without a
// location, and keeps its source location, if any, as a related location.
type SARIF struct {
	// Root is the directory locations are made relative to: for GitHub code scanning the repository root. Empty
	// means the report's project directory.
	Root string
	// Manifest names the project file (relative to the project) results without a location point at when the
	// report's provider source does not name one (an installed distribution). Empty means pyproject.toml.
	Manifest string
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                   `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult               `json:"results"`
	Properties         map[string]any              `json:"properties,omitempty"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifHelp struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	HelpURI              string         `json:"helpUri"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifHelp      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Kind                string            `json:"kind,omitempty"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	RelatedLocations    []sarifLocation   `json:"relatedLocations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	ID               *int          `json:"id,omitempty"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
	Message          *sarifText    `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           *sarifRegion     `json:"region,omitempty"`
}

type sarifArtifactLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// Render writes r as a SARIF log with one run.
func (s SARIF) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render sarif: no report")
	}
	root := s.Root
	if root == "" {
		root = r.Provider.Project
	}
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           "astrabox",
			Version:        r.Tool.Version,
			InformationURI: InformationURI,
			Rules:          []sarifRule{},
		}},
		Results: []sarifResult{},
		Properties: map[string]any{
			"provider": r.Provider.Name,
			"seed":     r.Seed,
		},
	}
	if filepath.IsAbs(root) {
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(root)}
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		run.OriginalURIBaseIDs = map[string]sarifArtifactLoc{SrcRoot: {URI: u.String()}}
	}
	ruleIndex := map[string]int{}
	for i := range r.Results {
		res := &r.Results[i]
		if _, ok := ruleIndex[res.Check]; ok {
			continue
		}
		ruleIndex[res.Check] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRuleOf(res))
	}
	for i := range r.Results {
		if out, ok := s.resultOf(&r.Results[i], ruleIndex[r.Results[i].Check], root, r.Provider); ok {
			run.Results = append(run.Results, out)
		}
	}
	doc := sarifLog{Schema: SARIFSchema, Version: SARIFVersion, Runs: []sarifRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render sarif: %w", err)
	}
	return nil
}

// resultOf is the SARIF result of one check, and whether the check is one (passed and skipped checks are
// not).
func (s SARIF) resultOf(res *Result, ruleIndex int, root string, p Provider) (sarifResult, bool) {
	var level, kind string
	switch res.Status {
	case StatusFailed, StatusFlaky:
		level = sarifLevel(res.Severity)
	case StatusWarning:
		level = "warning"
	case StatusNotExercised:
		level, kind = "none", "open"
	case StatusNotApplicable:
		level, kind = "none", "notApplicable"
	default:
		return sarifResult{}, false
	}
	msg := res.Title
	if res.Message != "" {
		msg = res.Message
	}
	if res.Status == StatusFlaky {
		msg = "(flaky) " + msg
	}
	if res.Hint != "" {
		msg += "\nHint: " + res.Hint
	}
	if res.Status == StatusNotExercised && res.DecidedOver != "" {
		msg += notExercisedNote(res.DecidedOver)
	}
	out := sarifResult{
		RuleID: res.Check, RuleIndex: ruleIndex, Kind: kind, Level: level, Message: sarifText{msg},
		Properties: map[string]any{"status": string(res.Status), "clauses": nonNil(res.Clauses)},
	}
	var path string
	primary := primaryLocation(res)
	if rel, ok := relIfLoc(root, p.Project, primary); ok {
		path = rel
		out.Locations = []sarifLocation{physical(rel, primary.Line)}
	} else {
		var line int
		path, line = s.declarationPath(root, p)
		out.Locations = []sarifLocation{physical(path, line)}
	}
	out.RelatedLocations = relatedLocations(res, primary, root, p.Project)
	out.PartialFingerprints = map[string]string{FingerprintKey: Fingerprint(res.Check, path, res.Message)}
	return out, true
}

// relatedLocations are a result's evidence locations, each once, then its own location when it lies outside
// the source root.
func relatedLocations(res *Result, primary *Location, root, project string) []sarifLocation {
	var out []sarifLocation
	add := func(loc sarifLocation, text string) {
		id := len(out) + 1
		loc.ID = &id
		loc.Message = &sarifText{text}
		out = append(out, loc)
	}
	seen := map[string]bool{}
	for j := range res.Evidence {
		e := &res.Evidence[j]
		if e.Location == nil || e.Location.Path == "" {
			continue
		}
		loc, ok := relatedPhysical(root, project, e.Location)
		key := locationString(e.Location)
		if !ok || seen[key] {
			continue
		}
		seen[key] = true
		add(loc, e.Text)
	}
	if primary != nil && !seen[locationString(primary)] {
		if _, inside := relIfLoc(root, project, primary); !inside {
			if loc, ok := relatedPhysical(root, project, primary); ok {
				add(loc, "source location outside the project")
			}
		}
	}
	return out
}

// sarifRuleOf describes the check of res as a SARIF rule.
func sarifRuleOf(res *Result) sarifRule {
	title := res.Title
	if title == "" {
		title = res.Check
	}
	full := res.Help
	if full == "" {
		full = title
	}
	text := full
	var md strings.Builder
	fmt.Fprintf(&md, "**%s**: %s\n\n%s\n", res.Check, title, full)
	if len(res.Clauses) > 0 {
		text += "\nClauses: " + strings.Join(res.Clauses, ", ")
		md.WriteString("\nClauses: `" + strings.Join(res.Clauses, "`, `") + "`\n")
	}
	if res.Hint != "" {
		text += "\nHint: " + res.Hint
		md.WriteString("\nHint: " + res.Hint + "\n")
	}
	tags := append([]string{"astrabox"}, res.Clauses...)
	props := map[string]any{"area": res.Area}
	if sec, ok := securityOf(res); ok {
		tags = append(tags, "security", sec.cwe)
		props["security-severity"] = sec.severity
	}
	props["tags"] = tags
	return sarifRule{
		ID:                   res.Check,
		Name:                 ruleName(title),
		ShortDescription:     sarifText{title},
		HelpURI:              ChecksDocURI + "#" + strings.ToLower(res.Check),
		FullDescription:      sarifText{full},
		Help:                 sarifHelp{Text: text, Markdown: md.String()},
		DefaultConfiguration: sarifConfig{Level: sarifLevel(res.Severity)},
		Properties:           props,
	}
}

// sarifLevel maps a severity to a SARIF level; an unknown severity is an error.
func sarifLevel(s Severity) string {
	switch s {
	case SeverityWarning:
		return "warning"
	case SeverityNote:
		return "note"
	}
	return "error"
}

// ruleName turns a title into an identifier-like rule name: "Plan is synchronous" -> "PlanIsSynchronous".
func ruleName(title string) string {
	var b strings.Builder
	up := true
	for _, r := range title {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "Check"
	}
	return b.String()
}

// relIfLoc makes l's path relative to root, when l is set and inside root (a relative path is relative to
// project).
func relIfLoc(root, project string, l *Location) (string, bool) {
	if l == nil {
		return "", false
	}
	return rootRel(root, project, l.Path)
}

// physical is a location relative to %SRCROOT%, on line when line is positive.
func physical(rel string, line int) sarifLocation {
	loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: escapePath(rel), URIBaseID: SrcRoot}}}
	if line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	return loc
}

// relatedPhysical is l relative to root when possible, else as an absolute file URI.
func relatedPhysical(root, project string, l *Location) (sarifLocation, bool) {
	if p, ok := rootRel(root, project, l.Path); ok {
		return physical(p, l.Line), true
	}
	abs := l.Path
	if !filepath.IsAbs(abs) && project != "" {
		abs = filepath.Join(project, filepath.FromSlash(abs))
	}
	if !filepath.IsAbs(abs) {
		return sarifLocation{}, false
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifactLoc{URI: u.String()}}}
	if l.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: l.Line}
	}
	return loc, true
}

// escapePath percent-encodes each segment of a slash-separated relative path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

var (
	hexRun   = regexp.MustCompile(`[0-9A-Fa-f]{6,}`)
	digitRun = regexp.MustCompile(`[0-9]+`)
	spaceRun = regexp.MustCompile(`\s+`)
)

// Skeleton reduces a message to what stays the same between runs with other seeds: hexadecimal runs of six
// or more characters that contain a digit (generated IDs, hashes) become "#", other digit runs become "0",
// whitespace collapses.
func Skeleton(msg string) string {
	s := hexRun.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.ContainsAny(m, "0123456789") {
			return "#"
		}
		return m
	})
	s = digitRun.ReplaceAllString(s, "0")
	return strings.TrimSpace(spaceRun.ReplaceAllString(s, " "))
}

// Fingerprint is the stable identity of a finding across runs: a SHA-256 over the check ID, the path it
// points at and the skeleton of its message, hex encoded (first 32 digits).
func Fingerprint(check, path, message string) string {
	h := sha256.New()
	h.Write([]byte(check))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write([]byte(Skeleton(message)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// nonNil returns xs, or an empty list for nil.
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// declarationPath is the file results without a usable location point at, relative to root, and its line:
// the file that declares the provider (the report's provider source, "setup.cfg:12 [options.entry_points]"),
// else Manifest, else pyproject.toml, line 1. The project may be a subdirectory of the repository root names.
func (s SARIF) declarationPath(root string, p Provider) (string, int) {
	name, line := declarationFile(p.Source)
	if name == "" {
		name, line = s.Manifest, 1
		if name == "" {
			name = "pyproject.toml"
		}
	}
	if rel, ok := rootRel(root, p.Project, name); ok {
		return rel, line
	}
	if rel, ok := relPath(root, name); ok {
		return rel, line
	}
	return "pyproject.toml", 1
}

// declarationFile reads the file and line out of a provider source ("pyproject.toml:7 [project.entry-points]",
// "setup.cfg [options.entry_points]"): the file only when it is a project manifest, the line 1 when unknown.
func declarationFile(source string) (string, int) {
	first, _, _ := strings.Cut(strings.TrimSpace(source), " ")
	first = strings.TrimSuffix(first, ";")
	file, line := first, 1
	if i := strings.LastIndex(first, ":"); i > 0 {
		if n, err := strconv.Atoi(first[i+1:]); err == nil && n > 0 {
			file, line = first[:i], n
		}
	}
	switch filepath.Base(filepath.ToSlash(file)) {
	case "pyproject.toml", "setup.cfg", "setup.py":
		return file, line
	}
	return "", 0
}

// notExercisedNote is the line a not_exercised result's message ends with: what was missing.
func notExercisedNote(decidedOver string) string { return "\nNot exercised: " + decidedOver }
