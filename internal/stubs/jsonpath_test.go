package stubs

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
)

const store = `{"store": {"book": [
  {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
  {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
  {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3", "price": 8.99},
  {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings", "isbn": "0-395-19395-8", "price": 22.99}
], "bicycle": {"color": "red", "price": 19.95}}, "expensive": 10}`

func TestJSONPathSelects(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(store), &doc); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]any{
		"$.store.book[*].author":                                           {"Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"},
		"$..author":                                                        {"Nigel Rees", "Evelyn Waugh", "Herman Melville", "J. R. R. Tolkien"},
		"$.store.book[2].title":                                            {"Moby Dick"},
		"$.store.book[-1].title":                                           {"The Lord of the Rings"},
		"$['store']['bicycle']['color']":                                   {"red"},
		"$.store.book[0,1].price":                                          {8.95, 12.99},
		"$.store.book[:2].category":                                        {"reference", "fiction"},
		"$.store.book[?(@.isbn)].title":                                    {"Moby Dick", "The Lord of the Rings"},
		"$.store.book[?(@.price < 10)].title":                              {"Sayings of the Century", "Moby Dick"},
		"$..book[?(@.author =~ /.*REES/i)].price":                          {8.95},
		"$.store.book[?(@.category == 'fiction' && @.price > 20)].author":  {"J. R. R. Tolkien"},
		"$.store.book[?(@.price > 20 || @.category == 'reference')].price": {8.95, 22.99},
		"$.store.book[?(!(@.isbn))].price":                                 {8.95, 12.99},
		"$.nothing.here":                                                   nil,
		"$.store.bicycle.*":                                                {"red", 19.95},
	}
	for src, want := range cases {
		p, err := compileJSONPath(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := p.eval(doc); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", src, got, want)
		}
	}
}

func TestJSONPathRefusesBadExpressions(t *testing.T) {
	for _, src := range []string{"store.book", "$.", "$[", "$[?(@.a ==)]", "$[?(@.a =~ 'x')]", "$.a[?(@.b", "$['a'", "$[x]"} {
		if _, err := compileJSONPath(src); err == nil {
			t.Errorf("%q compiled", src)
		}
	}
}

func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{"$.a.b[0]", "$..x[?(@.y > 2 && !(@.z))]", "$['a','b'][1:3]", "$[?(@.s =~ /a+/i)]"} {
		f.Add(s, `{"a": {"b": [1, {"x": 2}]}, "s": "aaa"}`)
	}
	f.Fuzz(func(t *testing.T, expr, doc string) {
		p, err := compileJSONPath(expr)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) == nil && nestingDepth([]byte(doc)) <= maxJSONDepth {
			_ = p.eval(v)
		}
	})
}

func FuzzMapping(f *testing.F) {
	f.Add([]byte(`{"request": {"method": "GET", "urlPathPattern": "/a/.*", "headers": {"X": {"matches": "a+"}}}, "response": {"status": 201, "jsonBody": {"a": 1}}}`))
	f.Add([]byte(`{"mappings": [{"scenarioName": "s", "requiredScenarioState": "Started", "newScenarioState": "b", "request": {"bodyPatterns": [{"equalToJson": {"a": "${json-unit.any-number}"}, "ignoreExtraElements": true}]}}]}`))
	f.Add([]byte(`{"id": "e1", "uuid": "e1", "name": "n", "persistent": true, "insertionIndex": 3, "metadata": {"a": 1}, "request": {"method": "GET", "urlPathTemplate": "/a/{id}/**", "pathParameters": {"id": {"equalTo": "b"}}}, "response": {"fault": "CONNECTION_RESET_BY_PEER"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse("fuzz.json", data, nil)
		if err != nil {
			return
		}
		set := NewSet(ms)
		req := &Request{Method: "GET", Body: data}
		req.URL, _ = url.Parse("/a/b?x=1")
		set.Match(req)
		set.Nearest(req)
	})
}
