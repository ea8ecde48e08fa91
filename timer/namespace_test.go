package timer

import (
	"strings"
	"testing"
)

func TestQualifiedTopics(t *testing.T) {
	for _, tc := range []struct {
		ns, name, topic string
	}{
		{"", "orders", "orders"},
		{"sandbox", "orders", "sandbox.orders"},
		{"s1", "a-b_c", "s1.a-b_c"},
	} {
		topic := QualifiedTopic(tc.ns, tc.name)
		if topic != tc.topic || !ValidTopic(topic) {
			t.Errorf("QualifiedTopic(%q, %q) = %q (valid %v), want %q, valid", tc.ns, tc.name, topic, ValidTopic(topic), tc.topic)
		}
		if ns, name := SplitTopic(topic); ns != tc.ns || name != tc.name || TopicName(topic) != tc.name {
			t.Errorf("SplitTopic(%q) = %q, %q; want %q, %q", topic, ns, name, tc.ns, tc.name)
		}
	}
	for _, bad := range []string{
		"", ".orders", "sandbox.", "Sandbox.orders", "1sandbox.orders", "sand-box.orders",
		"a.b.c", strings.Repeat("s", 17) + ".orders", "sandbox." + strings.Repeat("o", 57),
	} {
		if ValidTopic(bad) {
			t.Errorf("ValidTopic(%q) = true, want false", bad)
		}
	}
	if !ValidTopic("sandbox." + strings.Repeat("o", 56)) {
		t.Error("a qualified topic of 64 bytes refused")
	}
	for _, name := range []string{"sandbox.orders", "a.b"} {
		if ValidTopicName(name) {
			t.Errorf("ValidTopicName(%q) = true: a client's name must not hold the namespace separator", name)
		}
	}
}
