package conformance

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// smallRecording is a recording of a made-up run: one history with a planted secret, a material and a
// project skip.
func smallRecording() *Recording {
	ev := &Evidence{Project: "/astrabox-repo/testdata/providers/correct/x", Secrets: &secrets.Set{}, Material: map[string]string{},
		Config: map[string]any{"region": "eu-1", "retries": int64(3)}, Skipped: map[string]string{}}
	ev.Secrets.Add("canary-secret-value-0001", "config field api_key")
	ev.AddHistory(&simulate.History{Scenario: "basic", Seed: 7, Secrets: []secrets.Secret{{Value: "wit-token-of-session-s1", Origin: "workload identity token"}}})
	return &Recording{Fixture: "correct/x", Evidence: ev, Skipped: map[string]string{"SESSION-CLI-PROBE": "no image"},
		Results: []RecordedResult{{Check: "EP-GROUP", Status: report.StatusPassed, Message: "kept in every scenario"}}}
}

// TestRecordingRoundTrip writes a recording and reads it back: the secret set keeps its secrets in order
// (so that masking and the hunt find them), and writing what was read gives the same bytes.
func TestRecordingRoundTrip(t *testing.T) {
	data, err := EncodeRecording(smallRecording(), nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecording(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Evidence.Secrets.Len() != 2 || back.Evidence.Secrets.Mask("x wit-token-of-session-s1 y") == "x wit-token-of-session-s1 y" {
		t.Errorf("the secret set was not rebuilt: %d secrets", back.Evidence.Secrets.Len())
	}
	if back.Evidence.Config["retries"] != int64(3) || back.Skipped["SESSION-CLI-PROBE"] != "no image" {
		t.Errorf("config or skips changed: %#v %#v", back.Evidence.Config, back.Skipped)
	}
	again, err := EncodeRecording(back, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Errorf("a recording read back writes other bytes")
	}
	if _, err := DecodeRecording(data[:len(data)/2]); err == nil {
		t.Errorf("a truncated recording was read")
	}
}

func FuzzDecodeRecording(f *testing.F) {
	data, err := EncodeRecording(smallRecording(), nil)
	if err != nil {
		f.Fatal(err)
	}
	zr, _ := gzip.NewReader(bytes.NewReader(data))
	raw, _ := io.ReadAll(zr)
	f.Add(raw)
	f.Add([]byte(`{"Version":1,"Evidence":{"Secrets":{"Secrets":[{"Value":"short"}]}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		rec, err := decodeRecordingJSON(raw)
		if err != nil {
			return
		}
		// What reads must write again (the checks themselves are not held to evidence no run could give).
		if _, err := EncodeRecording(rec, nil); err != nil {
			t.Fatalf("a recording that reads cannot be written: %v", err)
		}
	})
}
