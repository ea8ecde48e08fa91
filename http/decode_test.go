package http

import (
	"errors"
	"testing"

	"github.com/toc-project/toc/timer"
)

// TestDecodeErrors: what json.Unmarshal reports alike as a syntax error
// is told apart, and a field decode does not know is named by its path.
func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct {
		body, field, message string
	}{
		{``, "", "the body is empty; a JSON object is required"},
		{" \n\t", "", "the body is empty; a JSON object is required"},
		{`{"topic": `, "", "the body ends in the middle of a JSON value"},
		{`{"topic": "a"} {}`, "", "trailing data after the JSON value"},
		{`{"topic": "a"}x`, "", "trailing data after the JSON value"},
		{`{"topic": }`, "", "malformed JSON at byte 11"},
		{`[1, 2]`, "", "the body must be a JSON object"},
		{`{"topic": 5}`, "topic", "must be a string"},
		{`{"topic": "a", "colour": "red"}`, "colour", "unknown field"},
		{`{"Topic": "a"}`, "Topic", `unknown field (field names are case-sensitive: "topic")`},
		{`{"topic": "a", "topic": "b"}`, "topic", `duplicate key "topic": a key may appear only once in an object`},
		{"{\"topic\": \"\xff\"}", "", "the body is not valid UTF-8"},
	} {
		var req jobRequest
		err := decodeBytes([]byte(tt.body), &req)
		fe, ok := errors.AsType[*timer.FieldError](err)
		if !ok || fe.Field != tt.field || fe.Message != tt.message {
			t.Errorf("%q: %v (%T), want field %q: %s", tt.body, err, err, tt.field, tt.message)
		}
	}
	var s struct {
		Retry struct {
			BaseMS int `json:"base_ms"`
		} `json:"retry"`
	}
	err := decodeBytes([]byte(`{"retry": {"base_ms": 1, "cap": 2}}`), &s)
	if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "retry.cap" || fe.Message != "unknown field" {
		t.Errorf("nested unknown field: %v", err)
	}
}
