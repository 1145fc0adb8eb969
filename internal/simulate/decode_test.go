package simulate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestRecordResultFailsLoudlyOnAnUndecodableValue: a reply value the harness wrote that does not decode is a
// protocol breach the call record names (callback, call, what was wrong), never a returned call without a
// result.
func TestRecordResultFailsLoudlyOnAnUndecodableValue(t *testing.T) {
	rec := &CallRecord{Key: "r1#3", Replica: "r1", Method: CallPrepareTurn}
	rep := &harness.Reply{ID: 3, OK: true, Value: json.RawMessage(`{"type":"RuntimeMaterials","files":"not a list"}`)}
	recordResult(rec, callResult{reply: rep}, callFacts{})
	if rec.Outcome != OutcomeDied || rec.ProcessKind != string(harness.KindProtocol) {
		t.Fatalf("outcome %s (%s), want died of a protocol error", rec.Outcome, rec.ProcessKind)
	}
	for _, want := range []string{"prepare_turn", "r1#3", "decode reply value", "files"} {
		if !strings.Contains(rec.ProcessError, want) {
			t.Errorf("process error %q does not name %q", rec.ProcessError, want)
		}
	}

	ok := &CallRecord{Key: "r1#4", Replica: "r1", Method: CallPrepareTurn}
	recordResult(ok, callResult{reply: &harness.Reply{ID: 4, OK: true, Value: json.RawMessage(`{"type":"RuntimeMaterials","turn_validity_seconds":30}`)}}, callFacts{})
	if !ok.Returned(KindMaterials) || ok.ProcessError != "" || !ok.Result.Validity().Valid() {
		t.Fatalf("a decodable value: outcome %s, result %+v, error %q", ok.Outcome, ok.Result, ok.ProcessError)
	}
}
