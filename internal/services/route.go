package services

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/egress"
)

// ThroughDouble is the egress service of a declared service on one replica: the proxy forwards each of its
// requests to the replica's listener of the deployment double (doubleURL), naming the service and the
// production host, so that the double records, attributes and faults it exactly as its own requests and
// then has the service's stand-in answer it (see double.Upstream).
func ThroughDouble(s Spec, doubleURL string) (egress.Service, error) {
	target, err := url.Parse(doubleURL)
	if err != nil || target.Host == "" {
		return egress.Service{}, fmt.Errorf("service %s: the double's address %q is not a URL", s.Name, doubleURL)
	}
	h := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			host := pr.In.URL.Host // host:port, as the egress proxy normalised it
			pr.SetURL(target)
			pr.Out.Header.Del(double.ServiceHeader) // a client never chooses the service
			pr.Out.Header.Set(double.ServiceHeader, s.Name)
			pr.Out.Header.Set(double.HostHeader, strings.ToLower(host))
			pr.Out.Host = pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// The double dropped the connection (a drop fault): drop the client's too.
			panic(http.ErrAbortHandler)
		},
	}
	var plain []string
	for i, u := range s.URLs {
		if strings.HasPrefix(strings.ToLower(u), "http://") && i < len(s.Hosts) {
			plain = append(plain, s.Hosts[i])
		}
	}
	return egress.Service{Name: s.Name, Hosts: s.Hosts, Handler: h, Reads: s.Reads, Plain: plain}, nil
}

// Upstream is the double's view of a service's stand-in; it counts writes as Classify does.
func Upstream(s Spec, si StandIn) double.Upstream {
	return double.Upstream{
		Handler:         si.Handler(),
		OperationHeader: s.OperationHeader,
		IsWrite: func(r *http.Request, body []byte) bool {
			return Classify(&s, Input{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: body}).Write
		},
	}
}
