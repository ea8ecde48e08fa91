package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
)

// hasDuplicateKey is the reference for checkKeys: a token-level pass with
// encoding/json's Decoder that tracks the keys of each open object.
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				k := tok.(string)
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.object {
				top.wantKey = true
			}
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			if top != nil && top.object {
				top.wantKey = true
			}
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
		if len(stack) == 0 && dec.More() == false {
			if _, err := dec.Token(); errors.Is(err, io.EOF) {
				return false
			}
		}
	}
}

// FuzzCheckKeys: on any JSON value checkKeys finds a repeated key exactly
// when the token-level reference does, never panics, and decode never
// panics on any input and names a field for every refusal it attributes.
func FuzzCheckKeys(f *testing.F) {
	for _, seed := range []string{
		`{"topic": "a", "topic": "b"}`,
		`{"a": {"b": 1, "b": 2}}`,
		`{"a": [{"x": 1}, {"x": 1, "y": [1, {"z": 0, "z": 0}]}]}`,
		`{"\u0074opic": 1, "topic": 2}`,
		`{"a\\"b": 1, "a\"b": 2}`,
		`[1, "x", true, null, -1.5e3, {}]`,
		`{"k1":1,"k2":1,"k3":1,"k4":1,"k5":1,"k6":1,"k7":1,"k8":1,"k9":1,"k10":1,"k11":1,"k12":1,"k13":1,"k14":1,"k15":1,"k16":1,"k17":1,"k1":1}`,
		`{"Topic": "a", "topic": "b", "delay_ms": 1}`,
		`{"jobs": [{"topic": "a"}, {"topic": "a", "topic": "b"}]}`,
		`"\ud800"`, `{}`, `[]`, `  {"a" : 1 , "b" : [ ] }  `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			err := checkKeys(data, nil)
			if want := hasDuplicateKey(data); (err != nil) != want {
				t.Fatalf("%q: checkKeys = %v, reference finds a duplicate: %v", data, err, want)
			}
			if fe, ok := errors.AsType[*timer.FieldError](err); err != nil && (!ok || !strings.HasPrefix(fe.Message, "duplicate key ")) {
				t.Fatalf("%q: %v does not name the key", data, err)
			}
		}
		raw, err := readBatchBody(bytes.NewReader(data), int64(len(data)))
		if err == nil {
			_, _, _, err = decodeBatch(raw)
		}
		if _, ok := errors.AsType[*timer.FieldError](err); err != nil && !ok {
			t.Fatalf("%q as a batch: %v is not a field error", data, err)
		}
		for _, target := range []any{new(jobRequest), new(whenRequest), new(struct {
			Jobs []jobRequest `json:"jobs"`
		})} {
			err := decodeBytes(data, target)
			if err != nil {
				if _, ok := errors.AsType[*timer.FieldError](err); !ok {
					t.Fatalf("%q into %T: %v is not a field error", data, target, err)
				}
				continue
			}
			if hasDuplicateKey(data) {
				t.Fatalf("%q into %T: accepted with a repeated key", data, target)
			}
		}
	})
}
