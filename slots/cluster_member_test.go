package slots

import "testing"

func TestParseMember(t *testing.T) {
	tests := []struct {
		data string
		want memberData
		ok   bool
	}{
		{`{"id":"a","addr":"a.test:8080","capacity":64}`, memberData{ID: "a", Node: "m-x-1", Addr: "a.test:8080", Capacity: 64}, true},
		{`{"id":"a"}`, memberData{ID: "a", Node: "m-x-1"}, true},
		{`{"id":"a","node":"forged","future":true}`, memberData{ID: "a", Node: "m-x-1"}, true}, // the znode's own name wins
		{`{"addr":"a.test:8080"}`, memberData{}, false},                                        // no ID
		{`{"id":""}`, memberData{}, false},
		{`{"id":7}`, memberData{}, false},
		{`not json`, memberData{}, false},
		{``, memberData{}, false},
	}
	for _, tt := range tests {
		got, err := parseMember("m-x-1", []byte(tt.data))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseMember(%q) = %+v, %v; want %+v, ok=%v", tt.data, got, err, tt.want, tt.ok)
		}
	}
}
