package services

import (
	"slices"
	"testing"
)

// TestResponseSecretsInsideAJSONSecret: Secrets Manager's SecretString is a JSON document; the provider reads
// and may leak a value inside it, so each string leaf is a secret as well as the whole string.
func TestResponseSecretsInsideAJSONSecret(t *testing.T) {
	body := []byte(`{"Name":"kestrel/tool","SecretString":"{\"api_key\":\"kst_live_0123456789abcdef\",\"region\":\"eu\"}"}`)
	got := ResponseSecrets(body, []string{"SecretString"})
	if !slices.Contains(got, "kst_live_0123456789abcdef") {
		t.Fatalf("the api_key inside SecretString is not a secret: %q", got)
	}
	if !slices.Contains(got, `{"api_key":"kst_live_0123456789abcdef","region":"eu"}`) {
		t.Fatalf("the whole SecretString is not a secret: %q", got)
	}
	if slices.Contains(got, "eu") {
		t.Fatalf("a leaf shorter than 6 characters is a secret: %q", got)
	}
	// A plain string secret stays one secret.
	if got := ResponseSecrets([]byte(`{"token":"abc-123456"}`), []string{"token"}); !slices.Equal(got, []string{"abc-123456"}) {
		t.Fatalf("plain secret: %q", got)
	}
}
