// Package auth holds the API's bearer tokens: who each one is (a
// Principal: name, role, topic patterns, quotas), read from a tokens file
// (--tokens-file) that is reloaded on SIGHUP and when it changes, or made
// from one token (--api-token, an admin of every topic).
//
// # The tokens file
//
//	{"tokens": [
//	  {"name": "ops", "token_sha256": "9f86d0...", "role": "admin"},
//	  {"name": "orders", "token": "a-long-random-secret", "role": "write",
//	   "topics": ["orders", "orders-*"], "max_topics": 100, "max_pending": 1000000, "rate": 500}
//	]}
//
// Every entry has a unique name, exactly one of token (the secret itself)
// and token_sha256 (its SHA-256, hex, so that the file need hold no
// secret), a role (admin, write or read) and, but for an admin, the topic
// patterns it may use (path.Match syntax: "*", "?", "[a-z]"). Quotas are
// optional, 0 or absent meaning none. In a toc with namespaces
// (--namespaces-file) an entry may name its namespace ("namespace":
// "sandbox"; absent: the default one), and every token, admins too, uses
// only the topics of its own. A file with any fault is refused whole, the
// error naming the entry and the field.
//
// A presented bearer token is looked up by its SHA-256, so a token_sha256
// entry works as a token entry does, and no comparison runs over the
// secrets themselves.
package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/toc-project/toc/timer"
)

// Role is what a token may do.
type Role string

// The roles, each allowing what the one below it does and more.
const (
	// Admin may do everything, on every topic: topic settings, the
	// cluster view, metrics included.
	Admin Role = "admin"
	// Write may schedule, cancel, reschedule, replay and purge jobs, and
	// manage schedules, in its topics.
	Write Role = "write"
	// Read may only GET, in its topics.
	Read Role = "read"
)

// rank orders the roles: a role of a higher rank may do what a lower one
// may.
func (r Role) rank() int {
	switch r {
	case Admin:
		return 3
	case Write:
		return 2
	case Read:
		return 1
	}
	return 0
}

// Allows reports whether r may do what need needs.
func (r Role) Allows(need Role) bool { return r.rank() >= need.rank() }

// Quotas bound what one token may use; 0 is no bound.
type Quotas struct {
	// MaxTopics bounds the topics that exist and match the token's
	// patterns (every topic, for an admin): creating one more, by a job's
	// first use or PUT /v1/topics/{topic}, is refused.
	MaxTopics int `json:"max_topics"`
	// MaxPending bounds the pending jobs of those topics.
	MaxPending int64 `json:"max_pending"`
	// Rate bounds the jobs the token schedules a second.
	Rate float64 `json:"rate"`
}

// Principal is who a token is.
type Principal struct {
	Name string
	Role Role
	// Topics are the patterns of the topics the token may use; nil for an
	// admin, who may use every topic of its namespace.
	Topics []string
	// Namespace is the namespace of the token's topics: "" for the
	// default one (see timer.QualifiedTopic).
	Namespace string
	// Fenced is set when toc has namespaces besides the default: p then
	// uses only the topics of its own, even as an admin.
	Fenced bool
	Quotas
}

// AllTopics reports whether p may use every topic toc holds.
func (p *Principal) AllTopics() bool {
	return !p.Fenced && (p.Role == Admin || slices.Contains(p.Topics, "*"))
}

// Allows reports whether p may use topic, a topic as toc holds it
// (qualified by its namespace): one of p's namespace whose name matches
// one of p's patterns.
func (p *Principal) Allows(topic string) bool {
	ns, name := timer.SplitTopic(topic)
	if ns != p.Namespace {
		return false
	}
	if p.Role == Admin || slices.Contains(p.Topics, "*") {
		return true
	}
	for _, pat := range p.Topics {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal of ctx, or nil when there is none (auth is
// off).
func From(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// Set is a set of tokens, looked up by the SHA-256 of the token presented.
type Set struct {
	byDigest map[[sha256.Size]byte]*Principal
	names    []string
	digests  [][sha256.Size]byte // of names, in order
}

// Len is how many tokens s holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byDigest)
}

// Names are the names of s's tokens, in the file's order.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Lookup returns the principal of the bearer token presented, or false.
func (s *Set) Lookup(token string) (*Principal, bool) {
	if s == nil || token == "" {
		return nil, false
	}
	p, ok := s.byDigest[sha256.Sum256([]byte(token))]
	return p, ok
}

// Named returns the principal of the token named name, or false: the
// owner of what a token made (a schedule), to apply its quotas later.
func (s *Set) Named(name string) (*Principal, bool) {
	if s == nil {
		return nil, false
	}
	for i, n := range s.names {
		if n == name {
			return s.byDigest[s.digests[i]], true
		}
	}
	return nil, false
}

// Hash is the token_sha256 of a token: its SHA-256 in lowercase hex.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// APITokenName is the name of the principal of an --api-token.
const APITokenName = "api-token"

// Admins returns a set of admin tokens of every topic, no quotas: what
// --api-token gives. The first is named APITokenName, the next
// api-token-2 and so on. Empty tokens are an error.
func Admins(tokens []string) (*Set, error) {
	s := &Set{byDigest: make(map[[sha256.Size]byte]*Principal, len(tokens))}
	for i, t := range tokens {
		if t == "" {
			return nil, errors.New("an empty token")
		}
		name := APITokenName
		if i > 0 {
			name = fmt.Sprintf("%s-%d", APITokenName, i+1)
		}
		s.add(sha256.Sum256([]byte(t)), &Principal{Name: name, Role: Admin})
	}
	return s, nil
}

// Fenced returns the tokens of s fenced in their namespaces: what the
// --api-token admins are in a toc with namespaces (admins of the default
// one).
func (s *Set) Fenced() *Set {
	f := &Set{byDigest: make(map[[sha256.Size]byte]*Principal, s.Len())}
	for _, d := range s.digests {
		p := *s.byDigest[d]
		p.Fenced = true
		f.add(d, &p)
	}
	return f
}

// Union returns the tokens of s and of o; o's are skipped where s has the
// same token or name.
func (s *Set) Union(o *Set) *Set {
	u := &Set{byDigest: make(map[[sha256.Size]byte]*Principal, s.Len()+o.Len())}
	for _, set := range []*Set{s, o} {
		if set == nil {
			continue
		}
		for _, d := range set.digests {
			if p := set.byDigest[d]; u.byDigest[d] == nil && !slices.Contains(u.names, p.Name) {
				u.add(d, p)
			}
		}
	}
	return u
}

func (s *Set) add(d [sha256.Size]byte, p *Principal) {
	s.byDigest[d] = p
	s.names = append(s.names, p.Name)
	s.digests = append(s.digests, d)
}

// MinTokenLength is the shortest token a tokens file may hold.
const MinTokenLength = 16

// entry is one token of the file as written.
type entry struct {
	Name        string   `json:"name"`
	Token       string   `json:"token"`
	TokenSHA256 string   `json:"token_sha256"`
	Role        Role     `json:"role"`
	Topics      []string `json:"topics"`
	MaxTopics   *int     `json:"max_topics"`
	MaxPending  *int64   `json:"max_pending"`
	Rate        *float64 `json:"rate"`
	Namespace   string   `json:"namespace"`
}

var (
	validName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)
	validDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// FileError is a fault of a tokens file, naming the entry (by index and
// name, when it has one) and the field.
type FileError struct {
	Index int // -1: the file as a whole
	Name  string
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	switch {
	case e.Index < 0 && e.Field == "":
		return e.Msg
	case e.Index < 0:
		return fmt.Sprintf("%s: %s", e.Field, e.Msg)
	case e.Name != "":
		return fmt.Sprintf("tokens[%d] (%s): %s: %s", e.Index, e.Name, e.Field, e.Msg)
	}
	return fmt.Sprintf("tokens[%d]: %s: %s", e.Index, e.Field, e.Msg)
}

// Parse reads a tokens file, strictly: an unknown field, a duplicate name
// or token, a bad role, a malformed pattern or a negative quota refuses
// the whole file with a *FileError.
func Parse(data []byte) (*Set, error) { return ParseIn(data, nil) }

// ParseIn reads a tokens file of a toc with the namespaces named, besides
// the default one: an entry's namespace must be one of them (or absent,
// for the default), and every token is fenced in its namespace. With no
// namespaces it is Parse.
func ParseIn(data []byte, namespaces []string) (*Set, error) {
	var file struct {
		Tokens *[]json.RawMessage `json:"tokens"`
	}
	if err := strict(data, &file); err != nil {
		return nil, &FileError{Index: -1, Msg: err.Error()}
	}
	if file.Tokens == nil || len(*file.Tokens) == 0 {
		return nil, &FileError{Index: -1, Field: "tokens", Msg: "must hold at least one token: with none every call would be refused"}
	}
	s := &Set{byDigest: make(map[[sha256.Size]byte]*Principal, len(*file.Tokens))}
	for i, raw := range *file.Tokens {
		var e entry
		if err := strict(raw, &e); err != nil {
			return nil, &FileError{Index: i, Field: "entry", Msg: err.Error()}
		}
		fail := func(field, format string, args ...any) error {
			return &FileError{Index: i, Name: e.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
		}
		p, d, err := e.principal(fail)
		if err != nil {
			return nil, err
		}
		if e.Namespace != "" && !slices.Contains(namespaces, e.Namespace) {
			if len(namespaces) == 0 {
				return nil, fail("namespace", "%q: toc has no namespaces besides the default (--namespaces-file)", e.Namespace)
			}
			return nil, fail("namespace", "%q is not one of the namespaces %s (or absent, for the default)", e.Namespace, strings.Join(namespaces, ", "))
		}
		p.Namespace, p.Fenced = e.Namespace, len(namespaces) > 0
		if slices.Contains(s.names, p.Name) {
			return nil, fail("name", "another entry has this name")
		}
		if other, dup := s.byDigest[d]; dup {
			return nil, fail("token", "the same token as entry %s", other.Name)
		}
		s.add(d, p)
	}
	return s, nil
}

// principal checks e and returns its principal and token digest.
func (e *entry) principal(fail func(field, format string, args ...any) error) (*Principal, [sha256.Size]byte, error) {
	var d [sha256.Size]byte
	switch {
	case !validName.MatchString(e.Name):
		return nil, d, fail("name", "must match %s", validName)
	case e.Token != "" && e.TokenSHA256 != "":
		return nil, d, fail("token", "give token or token_sha256, not both")
	case e.Token == "" && e.TokenSHA256 == "":
		return nil, d, fail("token", "required (or token_sha256)")
	case e.Token != "" && len(e.Token) < MinTokenLength:
		return nil, d, fail("token", "must be at least %d characters", MinTokenLength)
	case e.TokenSHA256 != "" && !validDigest.MatchString(e.TokenSHA256):
		return nil, d, fail("token_sha256", "must be 64 lowercase hex digits (toc tokens hash)")
	case e.Role.rank() == 0:
		return nil, d, fail("role", "must be admin, write or read")
	case e.Role == Admin && e.Topics != nil && !slices.Equal(e.Topics, []string{"*"}):
		return nil, d, fail("topics", "an admin uses every topic; leave topics out")
	case e.Role != Admin && len(e.Topics) == 0:
		return nil, d, fail("topics", "required: the patterns of the topics this token may use, such as [\"orders-*\"]")
	case e.MaxTopics != nil && *e.MaxTopics < 0:
		return nil, d, fail("max_topics", "must not be negative (0 or absent: no bound)")
	case e.MaxPending != nil && *e.MaxPending < 0:
		return nil, d, fail("max_pending", "must not be negative (0 or absent: no bound)")
	case e.Rate != nil && (*e.Rate < 0 || *e.Rate != *e.Rate || *e.Rate > 1e9):
		return nil, d, fail("rate", "must be within 0..1e9 jobs a second (0 or absent: no bound)")
	}
	for j, pat := range e.Topics {
		if pat == "" {
			return nil, d, fail(fmt.Sprintf("topics[%d]", j), "an empty pattern")
		}
		if _, err := path.Match(pat, ""); err != nil {
			return nil, d, fail(fmt.Sprintf("topics[%d]", j), "%q is not a pattern (path.Match syntax: *, ?, [a-z])", pat)
		}
	}
	if e.Token != "" {
		d = sha256.Sum256([]byte(e.Token))
	} else {
		_, _ = hex.Decode(d[:], []byte(e.TokenSHA256))
	}
	p := &Principal{Name: e.Name, Role: e.Role}
	if e.Role != Admin {
		p.Topics = slices.Clone(e.Topics)
	}
	if e.MaxTopics != nil {
		p.MaxTopics = *e.MaxTopics
	}
	if e.MaxPending != nil {
		p.MaxPending = *e.MaxPending
	}
	if e.Rate != nil {
		p.Rate = *e.Rate
	}
	return p, d, nil
}

// strict decodes data into v, refusing unknown fields and trailing data.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}
