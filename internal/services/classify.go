package services

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Protocol says how a request names the operation it performs.
type Protocol string

// The protocols a request is classified by.
const (
	// ProtocolREST: the method and path are the operation, and the path names the resource a write acts
	// on (for a POST, possibly a collection it adds to).
	ProtocolREST Protocol = "rest"
	// ProtocolAWSJSON: AWS's JSON protocol, every request POST / with the operation in X-Amz-Target
	// ("secretsmanager.GetSecretValue", "DynamoDB_20120810.PutItem").
	ProtocolAWSJSON Protocol = "aws-json"
	// ProtocolAWSQuery: AWS's query protocol, the operation in the Action parameter of a form body or query.
	ProtocolAWSQuery Protocol = "aws-query"
	// ProtocolJSONRPC: a JSON-RPC 2.0 body with its method.
	ProtocolJSONRPC Protocol = "json-rpc"
	// ProtocolGraphQL: a GraphQL document; its operation is query, mutation or subscription.
	ProtocolGraphQL Protocol = "graphql"
	// ProtocolDeclared: the operation is where the service's `operation` key says.
	ProtocolDeclared Protocol = "declared"
)

// KeyKind says how a write's key makes it count once.
type KeyKind string

// The kinds of key.
const (
	// KeyIdempotency is an idempotency key: every write carrying the same one is the same write (the server
	// answers a repeat with the first answer).
	KeyIdempotency KeyKind = "idempotency"
	// KeyConditional is a write's condition (If-Match, a check-and-set version): writes of one resource
	// under the same condition can apply once at most.
	KeyConditional KeyKind = "conditional"
)

// IdempotencyHeader is the standard idempotency request header (the IETF httpapi draft, Stripe's
// convention), recognised on every request with no configuration.
const IdempotencyHeader = "Idempotency-Key"

// awsKeyFields are the body fields AWS operations carry their idempotency token in, recognised on every
// AWS-protocol request.
var awsKeyFields = []string{"ClientRequestToken", "ClientToken", "IdempotencyToken"}

// awsResourceFields are the fields that name the resource an AWS operation acts on, in the order they are
// looked for (DynamoDB's TableName is taken with the item's Key).
var awsResourceFields = []string{"SecretId", "QueueUrl", "TopicArn", "FunctionName", "StreamName", "ResourceArn", "Bucket", "Name"}

// Key is what makes a write count once: an idempotency key or a condition.
type Key struct {
	Kind KeyKind `json:"kind"`
	// Source names where the key was found: "header Idempotency-Key", "body ClientRequestToken".
	Source string `json:"source"`
	Value  string `json:"value"`
}

// Class is what one recorded request is, computed once when the history is built (Classify).
type Class struct {
	// Write reports that the request changes the service's state.
	Write    bool     `json:"write"`
	Protocol Protocol `json:"protocol,omitempty"`
	// Operation is the RPC operation ("GetSecretValue", a JSON-RPC method, "mutation"); "" for REST.
	Operation string `json:"operation,omitempty"`
	// Key is the write's idempotency key or condition (nil: none).
	Key *Key `json:"key,omitempty"`
	// Resource is the key of the resource a write acts on ("" when the request does not name one): the
	// path of a REST write, an AWS operation's resource field (SecretId, Name, a DynamoDB
	// table and item key), or the service's declared resource field; for the deployment double's own
	// endpoints, the record key of /v1/records/.
	Resource string `json:"resource,omitempty"`
}

// KeyID is the identity under which writes of a service count once ("" when the request carries no key):
// the same idempotency key, or the same condition on the same resource.
func (c Class) KeyID(service string) string {
	if c.Key == nil || c.Key.Value == "" {
		return ""
	}
	id := service + "|" + string(c.Key.Kind) + "|" + c.Key.Source + "=" + c.Key.Value
	if c.Key.Kind == KeyConditional {
		if c.Resource == "" {
			return ""
		}
		id += "|" + c.Resource
	}
	return id
}

// Input is a request as the classifier sees it.
type Input struct {
	Method string
	// Path is the decoded URL path; Query the raw query string.
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// FieldWhere says which part of a request a declared field is in.
type FieldWhere string

// The parts of a request a field can be in.
const (
	InHeader FieldWhere = "header"
	InQuery  FieldWhere = "query"
	InBody   FieldWhere = "body"
)

// Field is a declared place in a request: a header, a query parameter, or a body field (a top-level JSON
// name or form field, or a JSON pointer starting with /).
type Field struct {
	Where FieldWhere
	Name  string
}

func (f Field) String() string { return string(f.Where) + " " + f.Name }

// ParseField reads "header NAME", "query NAME" or "body NAME-or-/pointer".
func ParseField(s string) (Field, error) {
	where, name, ok := strings.Cut(strings.TrimSpace(s), " ")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return Field{}, fmt.Errorf("%q must be \"header NAME\", \"query NAME\" or \"body NAME\" (a JSON pointer starts with /)", s)
	}
	switch FieldWhere(strings.ToLower(where)) {
	case InHeader:
		return Field{InHeader, http.CanonicalHeaderKey(name)}, nil
	case InQuery:
		return Field{InQuery, name}, nil
	case InBody:
		return Field{InBody, name}, nil
	}
	return Field{}, fmt.Errorf("%q: %q is not header, query or body", s, where)
}

// request is an Input with its body decoded once.
type request struct {
	Input
	query url.Values
	form  url.Values
	json  any
	isObj bool
}

func decode(in Input) *request {
	r := &request{Input: in}
	r.query, _ = url.ParseQuery(in.Query)
	body := bytes.TrimSpace(in.Body)
	ct, _, _ := mime.ParseMediaType(in.Header.Get("Content-Type"))
	switch {
	case ct == "application/x-www-form-urlencoded":
		r.form, _ = url.ParseQuery(string(body))
	case len(body) > 0 && (body[0] == '{' || body[0] == '['):
		var v any
		if json.Unmarshal(body, &v) == nil {
			r.json = v
			_, r.isObj = v.(map[string]any)
		}
	}
	return r
}

// value returns a field's value as text ("" when absent): strings as they are, other JSON values in
// canonical JSON.
func (r *request) value(f Field) string {
	switch f.Where {
	case InHeader:
		return r.Header.Get(f.Name)
	case InQuery:
		return r.query.Get(f.Name)
	case InBody:
		if r.form != nil {
			return r.form.Get(strings.TrimPrefix(f.Name, "/"))
		}
		return jsonText(r.lookup(f.Name))
	}
	return ""
}

// lookup finds a top-level JSON name or a JSON pointer in the body.
func (r *request) lookup(name string) any {
	if r.json == nil {
		return nil
	}
	if !strings.HasPrefix(name, "/") {
		m, _ := r.json.(map[string]any)
		return m[name]
	}
	cur := r.json
	for _, tok := range strings.Split(name[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	return cur
}

func jsonText(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(v) // map keys sorted: canonical enough to compare
	if err != nil {
		return ""
	}
	return string(b)
}

// param is an AWS query-protocol parameter (form body, else URL query).
func (r *request) param(name string) string {
	if v := r.form.Get(name); v != "" {
		return v
	}
	return r.query.Get(name)
}

// Classify classifies a request of a declared service (s nil: of the deployment double's own endpoints).
// It is the one place requests are classified: the double counts writes for its faults by it, and the
// history records its result on every request for the checks.
func Classify(s *Spec, in Input) Class {
	if in.Header == nil {
		in.Header = http.Header{}
	}
	method := strings.ToUpper(in.Method)
	r := decode(in)
	c := Class{Protocol: ProtocolREST}
	if s == nil {
		c.Write = method == http.MethodPut || method == http.MethodPost || method == http.MethodDelete || method == http.MethodPatch
		c.Resource = doubleRecordKey(in.Path)
		c.Key = headerKey(r, IdempotencyHeader)
		return c
	}
	c.Protocol, c.Operation = operationOf(s, r)
	c.Write = isWriteRequest(s, method, in.Path, c.Operation)
	c.Resource = resourceOf(s, r, c.Protocol, method)
	c.Key = keyOf(s, r, c.Protocol)
	return c
}

func headerKey(r *request, name string) *Key {
	if v := strings.TrimSpace(r.Header.Get(name)); v != "" {
		return &Key{Kind: KeyIdempotency, Source: "header " + name, Value: v}
	}
	return nil
}

// doubleRecordKey is the decoded record key of a /v1/records/ path of the double, or "".
func doubleRecordKey(p string) string {
	const prefix = "/v1/records/"
	if !strings.HasPrefix(p, prefix) {
		return ""
	}
	k := strings.TrimPrefix(p, prefix)
	if d, err := url.PathUnescape(k); err == nil {
		k = d
	}
	return k
}

// operationOf finds the operation a request names: where the service declares it, else by the protocols
// the kit knows (AWS JSON and query, JSON-RPC, GraphQL); REST has none.
func operationOf(s *Spec, r *request) (Protocol, string) {
	if s.Operation != nil {
		if v := r.value(*s.Operation); v != "" {
			return ProtocolDeclared, v
		}
	}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		return ProtocolAWSJSON, t[strings.LastIndexByte(t, '.')+1:]
	}
	if a := r.form.Get("Action"); a != "" {
		return ProtocolAWSQuery, a
	}
	if a := r.query.Get("Action"); a != "" && r.query.Get("Version") != "" {
		return ProtocolAWSQuery, a
	}
	if m, ok := r.json.(map[string]any); ok {
		if _, rpc := m["jsonrpc"].(string); rpc {
			if method, ok := m["method"].(string); ok && method != "" {
				return ProtocolJSONRPC, method
			}
		}
		if q, ok := m["query"].(string); ok && strings.Contains(strings.ToLower(r.Path), "graphql") {
			name, _ := m["operationName"].(string)
			return ProtocolGraphQL, graphQLOperation(q, name)
		}
	}
	if strings.Contains(strings.ToLower(r.Path), "graphql") {
		if q := r.query.Get("query"); q != "" {
			return ProtocolGraphQL, graphQLOperation(q, r.query.Get("operationName"))
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/graphql" {
			return ProtocolGraphQL, graphQLOperation(string(r.Body), "")
		}
	}
	return ProtocolREST, ""
}

var (
	graphQLComment = regexp.MustCompile(`#[^\n]*`)
	graphQLOp      = regexp.MustCompile(`(?:^|[\s}])(query|mutation|subscription)\b\s*([_A-Za-z][_0-9A-Za-z]*)?`)
)

// graphQLOperation is the type of the operation a document runs (the one named, when it holds several):
// "query", "mutation" or "subscription".
func graphQLOperation(doc, name string) string {
	doc = graphQLComment.ReplaceAllString(doc, "")
	first := ""
	for _, m := range graphQLOp.FindAllStringSubmatch(doc, -1) {
		if first == "" {
			first = m[1]
		}
		if name != "" && m[2] == name {
			return m[1]
		}
	}
	if first == "" || strings.HasPrefix(strings.TrimSpace(doc), "{") {
		return "query" // the shorthand { ... } is a query
	}
	return first
}

// isWriteRequest decides whether a request writes: GET, HEAD and OPTIONS never do, nor a declared read
// route; an operation is a write unless the service declares it a read, or its first verb reads (Get, List,
// Describe, Query, Scan, Head, Search ...; AWS's BatchGetItem and TransactGetItems read, DynamoDB's PutItem
// writes); anything else writes.
func isWriteRequest(s *Spec, method, path, operation string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	for _, rt := range s.Reads {
		if strings.EqualFold(rt.Method, method) && strings.HasPrefix(path, rt.PathPrefix) {
			return false
		}
	}
	if operation == "" {
		return true
	}
	if matchAny(s.WriteOperations, operation) {
		return true
	}
	if matchAny(s.ReadOperations, operation) {
		return false
	}
	return !readsByVerb(operation)
}

// matchAny reports whether an operation matches one of the patterns: a name, or a prefix ending in *,
// compared without case.
func matchAny(patterns []string, op string) bool {
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			if len(op) >= len(pre) && strings.EqualFold(op[:len(pre)], pre) {
				return true
			}
		} else if strings.EqualFold(p, op) {
			return true
		}
	}
	return false
}

var (
	readVerbs  = []string{"get", "list", "describe", "query", "scan", "head", "search", "lookup", "select", "read", "fetch", "find", "count", "exists", "subscription"}
	writeVerbs = []string{"put", "create", "update", "delete", "remove", "write", "set", "add", "insert", "modify", "send", "post", "patch", "tag", "untag", "attach", "detach", "start", "stop", "rotate", "restore", "register", "deregister", "enable", "disable", "publish", "invoke", "execute", "cancel", "import", "mutation", "upsert", "replace", "purge", "reset"}
)

// readsByVerb reports whether an operation's first verb reads: its words (split at _, -, ., /, : and case
// changes) are read from the left, and the first that is a known verb decides; a name with no known verb
// writes.
func readsByVerb(op string) bool {
	for _, w := range words(op) {
		w = strings.ToLower(w)
		if slices.Contains(readVerbs, w) {
			return true
		}
		if slices.Contains(writeVerbs, w) {
			return false
		}
	}
	return false
}

// words splits an operation name at separators and at lower-to-upper case changes.
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, c := range rs {
		switch {
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			flush()
			continue
		case unicode.IsUpper(c) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])):
			flush()
		}
		cur = append(cur, c)
	}
	flush()
	return out
}

// resourceOf finds the resource a request acts on: the service's declared resource fields first, then
// the AWS resource fields for an AWS-protocol request, then the path of a REST write.
func resourceOf(s *Spec, r *request, p Protocol, method string) string {
	for _, f := range s.Resource {
		if v := r.value(f); v != "" {
			return v
		}
	}
	switch p {
	case ProtocolAWSJSON, ProtocolAWSQuery:
		return awsResource(r)
	case ProtocolREST:
		switch method {
		case http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodPost:
			return r.Path
		}
	}
	return ""
}

// awsResource is the resource an AWS request names: a DynamoDB table and item key, or the first of the
// usual resource fields ("" for a request that names none, such as PutItem, whose item key only the table's
// schema tells: declare it with `resource`).
func awsResource(r *request) string {
	get := func(name string) string {
		if r.form != nil || r.json == nil {
			return r.param(name)
		}
		return jsonText(r.lookup(name))
	}
	if t := get("TableName"); t != "" {
		if k := get("Key"); k != "" {
			return t + " " + k
		}
		return ""
	}
	for _, f := range awsResourceFields {
		if v := get(f); v != "" {
			return v
		}
	}
	return ""
}

// keyOf finds a write's key: the standard Idempotency-Key header, the service's declared idempotency
// fields, the AWS token fields of an AWS-protocol request, then the declared conditions.
func keyOf(s *Spec, r *request, p Protocol) *Key {
	if k := headerKey(r, IdempotencyHeader); k != nil {
		return k
	}
	for _, f := range s.IdempotencyKeys {
		if v := r.value(f); v != "" {
			return &Key{Kind: KeyIdempotency, Source: f.String(), Value: v}
		}
	}
	if p == ProtocolAWSJSON || p == ProtocolAWSQuery {
		for _, name := range awsKeyFields {
			f := Field{InBody, name}
			if v := r.value(f); v != "" {
				return &Key{Kind: KeyIdempotency, Source: f.String(), Value: v}
			}
		}
	}
	for _, f := range s.Conditions {
		if v := r.value(f); v != "" {
			return &Key{Kind: KeyConditional, Source: f.String(), Value: v}
		}
	}
	return nil
}
