package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodFile = `{"tokens": [
  {"name": "ops", "token_sha256": "` + "%s" + `", "role": "admin"},
  {"name": "orders", "token": "orders-secret-0123456789", "role": "write", "topics": ["orders", "orders-*"],
   "max_topics": 100, "max_pending": 1000, "rate": 50},
  {"name": "viewer", "token": "viewer-secret-0123456789", "role": "read", "topics": ["*"]}
]}`

func TestParse(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(goodFile, "%s", Hash("ops-secret-0123456789"), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); strings.Join(got, ",") != "ops,orders,viewer" {
		t.Errorf("names %v", got)
	}
	ops, ok := s.Lookup("ops-secret-0123456789")
	if !ok || ops.Role != Admin || !ops.Allows("anything") {
		t.Errorf("ops by its sha256: %+v %v", ops, ok)
	}
	o, ok := s.Lookup("orders-secret-0123456789")
	if !ok || o.Role != Write || o.MaxTopics != 100 || o.MaxPending != 1000 || o.Rate != 50 {
		t.Fatalf("orders: %+v %v", o, ok)
	}
	for topic, want := range map[string]bool{"orders": true, "orders-eu": true, "ordersx": false, "billing": false, "": false} {
		if o.Allows(topic) != want {
			t.Errorf("orders.Allows(%q) = %v", topic, !want)
		}
	}
	v, _ := s.Lookup("viewer-secret-0123456789")
	if !v.AllTopics() || v.Role.Allows(Write) || !v.Role.Allows(Read) {
		t.Errorf("viewer %+v", v)
	}
	for _, bad := range []string{"", "orders-secret-012345678", "ops-secret-0123456789x", Hash("ops-secret-0123456789")} {
		if _, ok := s.Lookup(bad); ok {
			t.Errorf("Lookup(%q) found a token", bad)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	entry := func(extra string) string {
		return `{"tokens": [{"name": "a", "token": "aaaaaaaaaaaaaaaaaaaa", "role": "write", "topics": ["a-*"]}, ` + extra + `]}`
	}
	for _, c := range []struct{ file, want string }{
		{`{}`, "tokens: must hold at least one"},
		{`{"tokens": []}`, "tokens: must hold at least one"},
		{`{"tokens": [], "extra": 1}`, "unknown field"},
		{`not json`, "invalid character"},
		{`{"tokens": []} {}`, "data after"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"], "colour": "red"}`), `tokens[1]: entry: json: unknown field "colour"`},
		{entry(`{"name": "a", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"]}`), "tokens[1] (a): name: another entry has this name"},
		{entry(`{"name": "b", "token": "aaaaaaaaaaaaaaaaaaaa", "role": "write", "topics": ["b"]}`), "tokens[1] (b): token: the same token as entry a"},
		{entry(`{"name": "b", "token_sha256": "` + Hash("aaaaaaaaaaaaaaaaaaaa") + `", "role": "read", "topics": ["b"]}`), "tokens[1] (b): token: the same token as entry a"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "owner", "topics": ["b"]}`), "tokens[1] (b): role: must be admin, write or read"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b", "[z-"]}`), "tokens[1] (b): topics[1]: \"[z-\" is not a pattern"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write"}`), "tokens[1] (b): topics: required"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "admin", "topics": ["b"]}`), "tokens[1] (b): topics: an admin uses every topic"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"], "max_topics": -1}`), "tokens[1] (b): max_topics: must not be negative"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"], "max_pending": -5}`), "tokens[1] (b): max_pending: must not be negative"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"], "rate": -1}`), "tokens[1] (b): rate: must be within"},
		{entry(`{"name": "b", "token": "short", "role": "write", "topics": ["b"]}`), "tokens[1] (b): token: must be at least 16"},
		{entry(`{"name": "b", "role": "write", "topics": ["b"]}`), "tokens[1] (b): token: required"},
		{entry(`{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbb", "token_sha256": "` + Hash("x") + `", "role": "write", "topics": ["b"]}`), "tokens[1] (b): token: give token or token_sha256, not both"},
		{entry(`{"name": "b", "token_sha256": "ABC", "role": "write", "topics": ["b"]}`), "tokens[1] (b): token_sha256: must be 64 lowercase hex"},
		{entry(`{"name": "", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "write", "topics": ["b"]}`), "tokens[1]: name: must match"},
	} {
		_, err := Parse([]byte(c.file))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s)\n = %v\nwant a *FileError with %q", c.file, err, c.want)
		}
	}
}

func TestAdminsUnion(t *testing.T) {
	a, err := Admins([]string{"t0k3n", "other"})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := a.Lookup("t0k3n"); !ok || p.Name != APITokenName || p.Role != Admin {
		t.Errorf("--api-token: %+v %v", p, ok)
	}
	if _, err := Admins([]string{""}); err == nil {
		t.Error("Admins took an empty token")
	}
	f, err := Parse([]byte(`{"tokens": [{"name": "api-token", "token": "bbbbbbbbbbbbbbbbbbbb", "role": "read", "topics": ["b"]},
		{"name": "c", "token": "cccccccccccccccccccc", "role": "read", "topics": ["c"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	u := a.Union(f)
	if _, ok := u.Lookup("bbbbbbbbbbbbbbbbbbbb"); ok {
		t.Error("the file's entry named like the --api-token was kept")
	}
	if _, ok := u.Lookup("cccccccccccccccccccc"); !ok || u.Len() != 3 {
		t.Errorf("union: %v", u.Names())
	}
}

func TestFileReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tokens": [{"name": "a", "token": "aaaaaaaaaaaaaaaaaaaa", "role": "read", "topics": ["a"]}]}`)
	f, err := OpenFile(path, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.changed() {
		t.Error("changed right after loading")
	}
	write(`{"tokens": [{"name": "a", "token": "aaaaaaaaaaaaaaaaaaaa", "role": "bogus", "topics": ["a"]}]}`)
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "tokens[0] (a): role") {
		t.Errorf("Reload of a bad file = %v", err)
	}
	if _, ok := f.Set().Lookup("aaaaaaaaaaaaaaaaaaaa"); !ok {
		t.Error("a bad file dropped the tokens in force")
	}
	write(`{"tokens": [{"name": "b", "token": "bbbbbbbbbbbbbbbbbbbbbbbb", "role": "read", "topics": ["b"]}]}`)
	if !f.changed() {
		t.Error("a rewritten file of another size is not seen as changed")
	}
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Set().Lookup("aaaaaaaaaaaaaaaaaaaa"); ok {
		t.Error("the old token survived a good reload")
	}
	if _, err := OpenFile(filepath.Join(dir, "missing.json"), nil, nil, nil); err == nil {
		t.Error("OpenFile of a missing file succeeded")
	}
}

func TestNamespaces(t *testing.T) {
	file := `{"tokens": [
	  {"name": "online-ops", "token": "online-admin-0123456789", "role": "admin"},
	  {"name": "sandbox-ops", "token": "sandbox-admin-0123456789", "role": "admin", "namespace": "sandbox"},
	  {"name": "sandbox-orders", "token": "sandbox-write-0123456789", "role": "write", "topics": ["orders*"], "namespace": "sandbox"}]}`
	s, err := ParseIn([]byte(file), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	online, _ := s.Lookup("online-admin-0123456789")
	admin, _ := s.Lookup("sandbox-admin-0123456789")
	writer, _ := s.Lookup("sandbox-write-0123456789")
	for _, c := range []struct {
		p     *Principal
		topic string
		want  bool
	}{
		{online, "orders", true},
		{online, "sandbox.orders", false},
		{admin, "sandbox.orders", true},
		{admin, "sandbox.payments", true},
		{admin, "orders", false},
		{writer, "sandbox.orders-eu", true},
		{writer, "sandbox.payments", false},
		{writer, "orders", false},
		{writer, "other.orders", false},
	} {
		if got := c.p.Allows(c.topic); got != c.want {
			t.Errorf("%s.Allows(%q) = %v, want %v", c.p.Name, c.topic, got, c.want)
		}
	}
	for _, p := range []*Principal{online, admin, writer} {
		if p.AllTopics() {
			t.Errorf("%s.AllTopics() = true in a toc with namespaces", p.Name)
		}
	}
	if p, _ := mustAdmins(t).Fenced().Lookup("admin-token-0123456789"); p == nil || !p.Fenced || p.AllTopics() || !p.Allows("orders") || p.Allows("sandbox.orders") {
		t.Errorf("a fenced --api-token admin: %+v", p)
	}

	for _, c := range []struct {
		namespaces []string
		want       string
	}{
		{[]string{"staging"}, `tokens[1] (sandbox-ops): namespace: "sandbox" is not one of the namespaces staging`},
		{nil, `tokens[1] (sandbox-ops): namespace: "sandbox": toc has no namespaces besides the default`},
	} {
		if _, err := ParseIn([]byte(file), c.namespaces); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseIn with namespaces %v: %v, want %q", c.namespaces, err, c.want)
		}
	}
}

func mustAdmins(t *testing.T) *Set {
	t.Helper()
	s, err := Admins([]string{"admin-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
