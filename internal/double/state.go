package double

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand"
	"slices"
)

// Record is one stored record: its JSON value and version.
type Record struct {
	Value   json.RawMessage
	Version int64
}

// Fence is one operation fenced with POST /v1/fences.
type Fence struct {
	AgentID     string
	OperationID string
	// Seq is the Seq of the request that set the fence.
	Seq int64
}

// Credential is one issued credential.
type Credential struct {
	// Token is the secret token: never print it.
	Token       string
	PrincipalID string
	Audience    string
	// Seq is the Seq of the request that issued it (its answer may have been dropped).
	Seq int64
}

// Consent statuses named by the spec.
const (
	ConsentGranted = "granted"
	ConsentPending = "pending"
)

// TokenPrefix starts every issued token so that a leaked one is recognisable.
const TokenPrefix = "astx_cred_"

type consent struct {
	status string
	url    string
}

type state struct {
	records     map[string]Record
	lastVersion map[string]int64 // survives deletion so that versions never repeat for a key
	fences      map[string]Fence
	fenceOrder  []string
	credentials []Credential
	tokenSet    map[string]bool
	consents    map[string]consent
	onCheck     map[string]string
}

func newState() state {
	return state{
		records:     map[string]Record{},
		lastVersion: map[string]int64{},
		fences:      map[string]Fence{},
		tokenSet:    map[string]bool{},
		consents:    map[string]consent{},
		onCheck:     map[string]string{},
	}
}

// Records returns a copy of the stored records by key.
func (d *Double) Records() map[string]Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]Record, len(d.state.records))
	for k, r := range d.state.records {
		out[k] = Record{Value: slices.Clone(r.Value), Version: r.Version}
	}
	return out
}

// Fences returns the fences set so far, in the order they were first set.
func (d *Double) Fences() []Fence {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Fence, 0, len(d.state.fenceOrder))
	for _, op := range d.state.fenceOrder {
		out = append(out, d.state.fences[op])
	}
	return out
}

// IssuedTokens returns every token issued so far, in issue order. They are secrets: use them as canaries,
// never print them.
func (d *Double) IssuedTokens() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, len(d.state.credentials))
	for i, c := range d.state.credentials {
		out[i] = c.Token
	}
	return out
}

// Credentials returns every issued credential with its principal, audience and issuing request.
func (d *Double) Credentials() []Credential {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.state.credentials)
}

// SetConsent sets the consent state answered for principal (default: granted with an empty URL).
func (d *Double) SetConsent(principal, status, url string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state.consents[principal] = consent{status: status, url: url}
}

// SetConsentOnCheck makes the next POST /v1/consents/{principal}/check switch the principal's status to
// status (keeping its URL) before answering; later checks answer the new state unchanged. An empty status
// cancels a pending switch.
func (d *Double) SetConsentOnCheck(principal, status string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if status == "" {
		delete(d.state.onCheck, principal)
		return
	}
	d.state.onCheck[principal] = status
}

// Consent returns the consent state currently answered for principal.
func (d *Double) Consent(principal string) (status, url string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.consentLocked(principal)
	return c.status, c.url
}

func (d *Double) consentLocked(principal string) consent {
	if c, ok := d.state.consents[principal]; ok {
		return c
	}
	return consent{status: ConsentGranted}
}

// newTokenLocked returns a fresh token never issued before by this double.
func (d *Double) newTokenLocked() string {
	for {
		t := TokenPrefix + rand.Text()
		if d.tokenRand != nil {
			t = TokenPrefix + seededText(d.tokenRand)
		}
		if !d.state.tokenSet[t] {
			d.state.tokenSet[t] = true
			return t
		}
	}
}

// seededText returns 26 base32 characters drawn from r, like rand.Text but reproducible.
func seededText(r *mrand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, 26)
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(b)
}

// AppliedCount is the number of writes applied so far. A write whose ApplyOrder is larger than the count
// read at some moment was applied after that moment.
func (d *Double) AppliedCount() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applySeq
}

// Reset forgets every record, fence, credential, consent, fault and recorded request, and reseeds token
// generation, so that one running double (and the replica processes that know its URLs) can serve another
// scenario. It fails when requests are still being handled: the caller should then start a new double.
func (d *Double) Reset(seed int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("reset deployment double: it is closed")
	}
	if d.activeReqs > 0 || len(d.holds) > 0 {
		return fmt.Errorf("reset deployment double: %d request(s) still in progress", d.activeReqs)
	}
	d.state = newState()
	d.requests = nil
	d.seq = 0
	d.applySeq = 0
	d.faults = nil
	d.inFlight = map[string]Call{}
	d.hasFlight = map[string]bool{}
	d.tokenRand = nil
	if seed != 0 {
		d.tokenRand = mrand.New(mrand.NewSource(seed))
	}
	d.changedLocked()
	return nil
}
