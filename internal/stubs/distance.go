package stubs

import (
	"encoding/base64"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// How far a request is from a mapping, measured as WireMock 3 measures it for the "closest stub" of an
// unmatched request (RequestPattern's matcher, MatchResult and NearMissCalculator in wiremock/wiremock 3.13):
// each part of the request has a distance between 0 (matches) and 1, the parts are weighted, and the
// distance is the weighted sum over the sum of the weights. The URL and the method are measured first; when
// either differs, only they (with the scheme, host, port and client address, which mappings here never
// name and so always match) are counted; otherwise the path parameters, headers, query, form, cookies, body
// and multipart parts are added with weight 1 each.
const (
	weightScheme   = 3.0
	weightHost     = 10.0
	weightPort     = 10.0
	weightClientIP = 3.0
	weightURL      = 10.0
	weightMethod   = 3.0
	weightPart     = 1.0

	// partsAfterURL counts the parts WireMock adds once the URL and method match: path parameters,
	// headers, query parameters, form parameters, cookies, body patterns and multipart patterns.
	partsAfterURL = 7
)

// result is one matcher's verdict on a value: whether it matches and how far the value is.
type result struct {
	exact bool
	d     float64
}

var (
	exactMatch = result{exact: true}
	noMatch    = result{d: 1}
)

func resultOf(ok bool) result {
	if ok {
		return exactMatch
	}
	return noMatch
}

// aggregate is WireMock's MatchResult.aggregate: exact when every part is, the mean of the distances.
func aggregate(rs []result) result {
	if len(rs) == 0 {
		return exactMatch
	}
	out := result{exact: true}
	for _, r := range rs {
		out.exact = out.exact && r.exact
		out.d += r.d
	}
	out.d /= float64(len(rs))
	return out
}

// javaCompare orders distances as Java's Double.compare does: NaN after every number.
func javaCompare(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// best is the result with the least distance, the first among equals (WireMock's getBestMatch).
func best(rs []result) result {
	out := rs[0]
	for _, r := range rs[1:] {
		if javaCompare(r.d, out.d) < 0 {
			out = r
		}
	}
	return out
}

// normalisedLevenshtein is WireMock's normalisedLevenshteinDistance: the edit distance over the longer
// length (NaN for two empty strings, as in Java).
func normalisedLevenshtein(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	longest := max(len(ra), len(rb))
	if longest == 0 {
		return math.NaN()
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(rb)]) / float64(longest)
}

// result is the matcher's verdict with WireMock's distance: equalTo measures the edit distance, and and
// averages, or takes the least; every other matcher is 0 or 1 (for equalToJson and matchesJsonPath with a
// sub-matcher WireMock measures finer, counting differing JSON nodes; the kit counts them as all or nothing).
func (m *Matcher) result(value string, present bool) result {
	switch m.Kind {
	case MatchAnd:
		rs := make([]result, len(m.all))
		for i := range m.all {
			rs[i] = m.all[i].result(value, present)
		}
		return aggregate(rs)
	case MatchOr:
		out := result{d: math.Inf(1)}
		for i := range m.all {
			r := m.all[i].result(value, present)
			out.exact = out.exact || r.exact
			if javaCompare(r.d, out.d) < 0 {
				out.d = r.d
			}
		}
		return out
	case MatchEqualTo:
		r := result{exact: m.Match(value, present), d: 1}
		if present {
			r.d = normalisedLevenshtein(m.Operand, value)
		}
		return r
	}
	return resultOf(m.Match(value, present))
}

// multi is a matcher over a multi-valued attribute (a header, a query parameter): the best of its values,
// or the matcher applied to nothing when it was not sent.
func multi(m *Matcher, vals []string) result {
	if len(vals) == 0 {
		return m.result("", false)
	}
	rs := make([]result, len(vals))
	for i, v := range vals {
		rs[i] = m.result(v, true)
	}
	return best(rs)
}

// distance measures how far the request is from the pattern, as WireMock does.
func (p *RequestPattern) distance(r *Request) result {
	fixed := weightScheme + weightHost + weightPort + weightClientIP
	url, method := p.urlResult(r), resultOf(p.Method == "ANY" || p.Method == strings.ToUpper(r.Method))
	sum := weightURL*url.d + weightMethod*method.d
	weights := fixed + weightURL + weightMethod
	if !url.exact || !method.exact {
		return result{d: sum / weights}
	}
	parts := []result{p.pathParamsResult(r), p.headersResult(r), p.queryResult(r), exactMatch, p.cookiesResult(r),
		p.bodyResult(r), exactMatch}
	out := result{exact: true}
	for _, part := range parts {
		out.exact = out.exact && part.exact
		sum += weightPart * part.d
	}
	out.d = sum / (weights + weightPart*partsAfterURL)
	return out
}

func (p *RequestPattern) urlResult(r *Request) result {
	u := r.URL
	switch p.URLKind {
	case URLEqual:
		full := u.EscapedPath()
		if u.RawQuery != "" {
			full += "?" + u.RawQuery
		}
		return result{exact: full == p.URL, d: normalisedLevenshtein(p.URL, full)}
	case URLPath:
		if p.matchURL(u) {
			return exactMatch
		}
		return result{d: normalisedLevenshtein(p.URL, u.EscapedPath())}
	case URLPathTemplate:
		// WireMock measures a template with each variable and wildcard written as "_".
		if p.matchURL(u) {
			return exactMatch
		}
		return result{d: normalisedLevenshtein(templateSymbol.ReplaceAllString(p.URL, "_"), u.EscapedPath())}
	}
	return resultOf(p.matchURL(u))
}

func (p *RequestPattern) pathParamsResult(r *Request) result {
	if len(p.PathParams) == 0 {
		return exactMatch
	}
	vals, ok := p.pathValues(r.URL.EscapedPath())
	if !ok {
		return noMatch
	}
	var rs []result
	for _, name := range sortedKeys(p.PathParams) {
		m := p.PathParams[name]
		v, ok := vals[name]
		rs = append(rs, m.result(v, ok))
	}
	return aggregate(rs)
}

func (p *RequestPattern) headersResult(r *Request) result {
	headers := p.Headers
	if p.BasicAuth != nil {
		// WireMock turns basicAuthCredentials into one more header pattern.
		headers = make(map[string]Matcher, len(p.Headers)+1)
		for k, v := range p.Headers {
			headers[k] = v
		}
		headers["authorization"] = Matcher{Kind: MatchEqualTo,
			Operand: "Basic " + base64.StdEncoding.EncodeToString([]byte(p.BasicAuth.Username+":"+p.BasicAuth.Password))}
	}
	var rs []result
	for _, name := range sortedKeys(headers) {
		m := headers[name]
		rs = append(rs, multi(&m, r.Header.Values(name)))
	}
	return aggregate(rs)
}

func (p *RequestPattern) queryResult(r *Request) result {
	query := r.URL.Query()
	var rs []result
	for _, name := range sortedKeys(p.Query) {
		m := p.Query[name]
		rs = append(rs, multi(&m, query[name]))
	}
	return aggregate(rs)
}

func (p *RequestPattern) cookiesResult(r *Request) result {
	if len(p.Cookies) == 0 {
		return exactMatch
	}
	cookies := (&http.Request{Header: r.Header}).Cookies()
	var rs []result
	for _, name := range sortedKeys(p.Cookies) {
		m := p.Cookies[name]
		var vals []string
		for _, c := range cookies {
			if c.Name == name {
				vals = append(vals, c.Value)
			}
		}
		if len(vals) == 0 {
			// WireMock: a missing cookie matches only an absent matcher.
			rs = append(rs, resultOf(m.Kind == MatchAbsent && m.Absent))
			continue
		}
		rs = append(rs, multi(&m, vals))
	}
	return aggregate(rs)
}

func (p *RequestPattern) bodyResult(r *Request) result {
	rs := make([]result, len(p.Body))
	for i := range p.Body {
		rs[i] = p.Body[i].result(string(r.Body), len(r.Body) > 0)
	}
	return aggregate(rs)
}

func sortedKeys(m map[string]Matcher) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// templateSymbol is what WireMock's PathTemplate treats as special in a urlPathTemplate: a {variable} or a
// ** wildcard.
var templateSymbol = regexp.MustCompile(`\{([^}]+)\}|\*\*`)

// compileTemplate compiles a urlPathTemplate as WireMock's PathTemplate does: a variable matches one path
// segment ([^/]+), a ** wildcard anything (lazily), everything else itself. It returns the names of the
// variables in order (wildcards are named 0, 1, ...).
func compileTemplate(src string) (*regexp.Regexp, []string) {
	var b strings.Builder
	var vars []string
	b.WriteString("^")
	last, wildcards := 0, 0
	for _, loc := range templateSymbol.FindAllStringSubmatchIndex(src, -1) {
		b.WriteString(regexp.QuoteMeta(src[last:loc[0]]))
		if loc[2] >= 0 {
			name := strings.NewReplacer(".", "", ";", "", "*", "").Replace(src[loc[2]:loc[3]])
			vars = append(vars, name)
			b.WriteString("([^/]+)")
		} else {
			vars = append(vars, strconv.Itoa(wildcards))
			wildcards++
			b.WriteString("(.*?)")
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(src[last:]))
	b.WriteString("$")
	return regexp.MustCompile(b.String()), vars
}

// pathValues parses a request path against the urlPathTemplate: the value of each variable, false when the
// path does not fit the template.
func (p *RequestPattern) pathValues(path string) (map[string]string, bool) {
	if p.template == nil {
		return nil, false
	}
	sub := p.template.FindStringSubmatch(path)
	if sub == nil {
		return nil, false
	}
	vals := make(map[string]string, len(p.vars))
	for i, name := range p.vars {
		vals[name] = sub[i+1]
	}
	return vals, true
}
