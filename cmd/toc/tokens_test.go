package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two refused reloads of the tokens file in a row, well within the rate
// limit of repeated warnings, are each logged with their reason; the
// tokens loaded before stay in force.
func TestTokensFileRefusalsAreEachLogged(t *testing.T) {
	fs := newFlagSet("serve", "serve")
	f := addServiceFlags(fs, "text")
	if err := fs.parse(nil); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	log, err := f.logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tokens": [{"name": "ops", "token": "ops-token-0123456789abcdef", "role": "admin"}]}`)
	file, err := openTokensFile(path, nil, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	write(`{"tokens": [{"name": "ops", "token": "ops-token-0123456789abcdef", "role": "superuser"}]}`)
	if file.Reload() == nil {
		t.Fatal("a bad role was loaded")
	}
	write(`{"tokens": [`)
	if file.Reload() == nil {
		t.Fatal("a truncated file was loaded")
	}
	logged := out.String()
	if n := strings.Count(logged, "tokens file refused"); n != 2 {
		t.Errorf("%d refusals logged, want 2:\n%s", n, logged)
	}
	if !strings.Contains(logged, "role: must be admin, write or read") || !strings.Contains(logged, "unexpected EOF") {
		t.Errorf("the refusals' reasons are not both logged:\n%s", logged)
	}
	if file.Set().Len() != 1 {
		t.Errorf("%d tokens in force after two refusals, want the 1 loaded before", file.Set().Len())
	}
}
