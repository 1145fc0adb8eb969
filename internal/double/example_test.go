package double_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/double"
)

// A simulator holds a replica's write, fences its operation, then releases it: the write is refused.
func Example() {
	d, err := double.Start(double.Options{})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	base, _ := d.URL("replica-1")

	d.SetInFlight("replica-1", double.Call{Callback: "prepare", CallID: "c-1", Step: "cold-start"})
	hold := d.AddFault(double.Fault{Kind: double.Hold, Method: "PUT"})

	done := make(chan int)
	go func() {
		req, _ := http.NewRequest("PUT", base+"/v1/records/agent-1", strings.NewReader(`{"value": "ready"}`))
		req.Header.Set(double.OperationHeader, "op-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	_ = d.WaitHeld(context.Background(), 1)

	res, _ := http.Post(base+"/v1/fences", "application/json",
		strings.NewReader(`{"agent_id": "agent-1", "operation_id": "op-1"}`))
	res.Body.Close()
	d.Release(hold)
	fmt.Println("held write answered", <-done)

	for _, r := range d.Requests() {
		fmt.Println(r.Seq, r.Method, r.Path, r.Status, r.Call.Callback, r.Held, r.Fenced, r.Applied)
	}
	fmt.Println("records:", len(d.Records()))
	// Output:
	// held write answered 409
	// 1 PUT /v1/records/agent-1 409 prepare true true false
	// 2 POST /v1/fences 200 prepare false false true
	// records: 0
}
