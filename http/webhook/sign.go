package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Secrets in the Standard Webhooks form: whsec_ and the base64 of a key
// of 24 to 64 bytes.
const (
	secretPrefix   = "whsec_"
	minSecretBytes = 24
	maxSecretBytes = 64
)

// Sign returns one Standard Webhooks signature entry, "v1," and the
// base64 of HMAC-SHA256(secret, msgID + "." + ts + "." + body), where ts
// is the webhook-timestamp in Unix seconds.
func Sign(secret []byte, msgID string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	var num [20]byte
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(num[:0], ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ParseSecret decodes a secret in the Standard Webhooks form, whsec_ and
// the base64 of a key of 24 to 64 bytes, into the key. Its errors never
// quote the secret.
func ParseSecret(s string) ([]byte, error) {
	key, err := parseSecret(s)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	return key, nil
}

func parseSecret(s string) ([]byte, error) {
	enc, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, errors.New("must start with " + secretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, errors.New("not valid base64 after " + secretPrefix)
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, fmt.Errorf("key is %d bytes, want %d to %d", len(key), minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// NewSecret returns a new random secret of 24 bytes in the whsec_ form.
func NewSecret() string {
	key := make([]byte, minSecretBytes)
	rand.Read(key) // never fails, as of Go 1.24
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}
