package conformance

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/deepjson"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// RecordingRoot stands for the repository's root in a recording: every path under the machine's checkout
// is written relative to it, so that a recording holds nothing of the machine it was made on.
const RecordingRoot = "/astrabox-repo"

// RecordingVersion is the shape of a recording; a recording of another version is refused with the
// command that records it again.
const RecordingVersion = 2

// Recording is the evidence a fixture's run handed its judge, with the verdict the run gave, so that the
// judge can be replayed without Python (the recorded-evidence lane of docs/architecture.md).
type Recording struct {
	Version int
	// Fixture names the fixture: "broken/leak-log", "correct/minimal".
	Fixture string
	// NearMiss marks a project that declared no provider in the group, judged as nearMissReport does.
	NearMiss bool
	// Skipped and SkipFile are the project's own reasoned skips ([tool.astrabox] skip) and their file's name.
	Skipped  map[string]string
	SkipFile string
	Evidence *Evidence
	// Results are the live run's verdicts, check by check, with their (masked) messages.
	Results []RecordedResult
}

// RecordedResult is one check's verdict in a recording.
type RecordedResult struct {
	Check   string
	Status  report.Status
	Message string
}

// RecordedResults keeps of a report's results what a recording compares: status and message per check.
func RecordedResults(results []report.Result) []RecordedResult {
	out := make([]RecordedResult, 0, len(results))
	for _, r := range results {
		out = append(out, RecordedResult{Check: r.Check, Status: r.Status, Message: r.Message})
	}
	return out
}

// Replay judges the recorded evidence as the run did: every check, with the project's skips, masked as
// Decide masks a report.
func (r *Recording) Replay() ([]report.Result, error) {
	if r.NearMiss {
		return nearMissResults(r.Evidence, Options{}), nil
	}
	return maskResults((Verdicts{Skipped: r.Skipped, SkipFile: r.SkipFile}).Judge(r.Evidence), r.Evidence.Secrets)
}

// secretsProxy is what a recording keeps of a secret set: its secrets in the order they were added and how
// many were dropped past the cap; the indexes are rebuilt by adding them again.
type secretsProxy struct {
	Secrets []secrets.Secret
	Dropped int
}

// recordingCodec is the codec of recordings. Rewrite, when set, maps the machine's paths to RecordingRoot.
func recordingCodec(rewrite func(string) string) *deepjson.Codec {
	c := deepjson.New()
	c.Rewrite = rewrite
	// The interner is a cache of Material's strings, which the recording holds.
	c.Customize(reflect.TypeFor[interner](), deepjson.Custom{})
	c.Customize(reflect.TypeFor[secrets.Set](), deepjson.Custom{
		Proxy: func(v reflect.Value) (any, error) {
			list, err := deepjson.Field(v, "secrets")
			if err != nil {
				return nil, err
			}
			dropped, err := deepjson.Field(v, "dropped")
			if err != nil {
				return nil, err
			}
			return secretsProxy{Secrets: list.Interface().([]secrets.Secret), Dropped: int(dropped.Int())}, nil
		},
		New: func() any { return &secretsProxy{} },
		Restore: func(v reflect.Value, p any) error {
			sp := p.(*secretsProxy)
			set := v.Addr().Interface().(*secrets.Set)
			for _, s := range sp.Secrets {
				if !set.AddSecret(s) {
					return fmt.Errorf("a recorded secret from %s could not be added again", s.Origin)
				}
			}
			dropped, err := deepjson.Field(v, "dropped")
			if err != nil {
				return err
			}
			dropped.SetInt(int64(sp.Dropped))
			return nil
		},
	})
	return c
}

// RecordingHome stands for the home directory of whoever recorded (the interpreter's and the kit's cache
// paths under it appear in frames).
const RecordingHome = "/home/recorder"

// RootRewrite maps every occurrence of the repository root (an absolute path) to RecordingRoot, then of the
// home directory (when it is a path of its own, not "/") to RecordingHome.
func RootRewrite(root, home string) func(string) string {
	return func(s string) string {
		if strings.Contains(s, root) {
			s = strings.ReplaceAll(s, root, RecordingRoot)
		}
		if len(home) > 1 && strings.Contains(s, home+"/") {
			s = strings.ReplaceAll(s, home+"/", RecordingHome+"/")
		}
		return s
	}
}

// EncodeRecording writes a recording as gzip-compressed deterministic JSON, every string passed through
// rewrite (RootRewrite).
func EncodeRecording(r *Recording, rewrite func(string) string) ([]byte, error) {
	r.Version = RecordingVersion
	data, err := recordingCodec(rewrite).Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode the recording of %s: %w", r.Fixture, err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxRecording bounds a recording's decompressed size.
const maxRecording = 256 << 20

// DecodeRecording reads a recording written by EncodeRecording.
func DecodeRecording(data []byte) (*Recording, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read the recording: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxRecording+1))
	if err != nil {
		return nil, fmt.Errorf("read the recording: %w", err)
	}
	if len(raw) > maxRecording {
		return nil, errors.New("read the recording: larger than 256 MiB uncompressed")
	}
	return decodeRecordingJSON(raw)
}

// decodeRecordingJSON reads a recording's uncompressed JSON.
func decodeRecordingJSON(raw []byte) (*Recording, error) {
	r := &Recording{}
	if err := recordingCodec(nil).Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("read the recording: %w", err)
	}
	if r.Version != RecordingVersion {
		return nil, fmt.Errorf("read the recording: version %d, this kit reads %d", r.Version, RecordingVersion)
	}
	if r.Evidence == nil {
		return nil, errors.New("read the recording: it holds no evidence")
	}
	if r.Evidence.Secrets == nil {
		r.Evidence.Secrets = &secrets.Set{}
	}
	return r, nil
}
