// Namespaces: one toc holding the topics of several namespaces (such as
// online and sandbox), each with its own topics. Inside toc a topic of a
// namespace other than the default is named by the namespace, a dot and
// its name ("sandbox.orders"), so that the same name in two namespaces is
// two topics; a client only ever sees and gives the name. The dot is not
// a character of a topic name, so no name of the default namespace can be
// taken for another's.

package timer

import "strings"

// NamespaceSep parts a namespace from a topic name in a qualified topic.
const NamespaceSep = "."

// MaxNamespaceBytes is the longest namespace name.
const MaxNamespaceBytes = 16

// ValidNamespace reports whether ns is a valid namespace name: 1 to 16
// bytes of [a-z0-9], starting with a letter.
func ValidNamespace(ns string) bool {
	if len(ns) == 0 || len(ns) > MaxNamespaceBytes || ns[0] < 'a' || ns[0] > 'z' {
		return false
	}
	for i := 1; i < len(ns); i++ {
		if c := ns[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// QualifiedTopic returns the topic toc holds name of namespace ns by:
// name itself in the default namespace (""), "<ns>.<name>" in another.
func QualifiedTopic(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + NamespaceSep + name
}

// SplitTopic returns the namespace ("" for the default) and the name of
// a topic as toc holds it.
func SplitTopic(topic string) (ns, name string) {
	if ns, name, ok := strings.Cut(topic, NamespaceSep); ok {
		return ns, name
	}
	return "", topic
}

// TopicName returns the name a client knows topic by: its name without
// its namespace.
func TopicName(topic string) string {
	_, name := SplitTopic(topic)
	return name
}
