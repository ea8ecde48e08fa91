// Namespaces: a token of a namespace gives and sees topic names; toc
// holds them qualified by the namespace (timer.QualifiedTopic). Every
// topic a request names goes through qualify on its way in (the gate does
// it for every route, gate.go), and every
// topic an answer shows through shownTopic on its way out; the tenant
// checks (allowTopic, visibleJob) compare the qualified topic with the
// token's namespace, so that a topic that missed its way in is refused,
// not taken for another namespace's.

package http

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/toc-project/toc/timer"
)

// Namespace is what the API enforces of a namespace.
type Namespace struct {
	// CallbackHosts, when any, are the only hosts its jobs may call back:
	// a host name, or "*.example.com" for any name under example.com
	// (a sandbox that must not reach production receivers).
	CallbackHosts []string
}

// namespaceOf returns the namespace of the request's token: "" for the
// default one, and when auth is off.
func namespaceOf(ctx context.Context) string {
	if p := principalFrom(ctx); p != nil {
		return p.Namespace
	}
	return ""
}

// qualify returns the topic toc holds the request's topic name by: name
// qualified by the token's namespace. A name that is not a client's
// topic name (the namespace separator included) or too long once
// qualified is refused with a *timer.FieldError of field. An empty name
// (an optional filter left out) stays empty.
func qualify(ctx context.Context, field, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if !timer.ValidTopicName(name) {
		return "", &timer.FieldError{Field: field, Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$"}
	}
	ns := namespaceOf(ctx)
	topic := timer.QualifiedTopic(ns, name)
	if len(topic) > timer.MaxTopicBytes {
		return "", &timer.FieldError{Field: field, Message: fmt.Sprintf("at most %d bytes in namespace %s", timer.MaxTopicBytes-len(ns)-len(timer.NamespaceSep), ns)}
	}
	return topic, nil
}

// shownTopic is the name an answer shows topic by: without its namespace,
// which is the token's own.
func shownTopic(topic string) string { return timer.TopicName(topic) }

// shownMessage is an error message as a token of a namespace sees it:
// the topics the task store quotes ("sandbox.orders") by their names.
func shownMessage(ctx context.Context, msg string) string {
	if ns := namespaceOf(ctx); ns != "" {
		return strings.ReplaceAll(msg, `"`+ns+timer.NamespaceSep, `"`)
	}
	return msg
}

// checkCallback refuses a callback URL the API does not deliver to: one
// that resolves to a private address (unless allowed), or, in a namespace
// with CallbackHosts, of a host not among them.
func (a *API) checkCallback(ctx context.Context, raw string) error {
	if err := a.guard.Check(ctx, raw); err != nil {
		return err
	}
	ns := namespaceOf(ctx)
	hosts := a.cfg.Namespaces[ns].CallbackHosts
	if len(hosts) == 0 {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &timer.FieldError{Field: "callback_url", Message: "must be an absolute http or https URL"}
	}
	if !hostAllowed(strings.ToLower(u.Hostname()), hosts) {
		return &timer.FieldError{Field: "callback_url", Message: fmt.Sprintf("host %s is not one namespace %s may call back (%s)", u.Hostname(), ns, strings.Join(hosts, ", "))}
	}
	return nil
}

// hostAllowed reports whether host is one of hosts: equal to one, or
// under the domain of a "*.domain" one.
func hostAllowed(host string, hosts []string) bool {
	for _, h := range hosts {
		if domain, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+domain) {
				return true
			}
		} else if host == h {
			return true
		}
	}
	return false
}

// ValidCallbackHost reports whether h can be a namespace's callback host:
// an IP address, a lowercase host name ([a-z0-9.-]), or "*." and one.
func ValidCallbackHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for _, c := range h {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return true
}
