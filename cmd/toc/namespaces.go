// Namespaces (--namespaces-file): topics of several namespaces in one
// toc, each namespace with its own topics, Redis key prefix, webhook
// secrets and, optionally, the only callback hosts it may call.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// namespace is one entry of a namespaces file.
type namespace struct {
	Name string `json:"name"`
	// RedisPrefix starts the keys of the namespace's slots (default: the
	// --redis-prefix, the name and a colon).
	RedisPrefix string `json:"redis_prefix"`
	// WebhookSecrets sign its callbacks, in place of --webhook-secret.
	WebhookSecrets []string `json:"webhook_secrets"`
	// CallbackHosts, when any, are the only hosts its jobs may call.
	CallbackHosts []string `json:"callback_hosts"`
}

// namespaces are the namespaces of a toc besides the default one.
type namespaces []namespace

// readNamespaces reads the namespaces file at path, strictly: an unknown
// field, a bad or repeated name, a prefix another namespace uses, a
// namespace without a webhook secret, or a bad callback host refuses the
// file, naming the entry and the field. defaultPrefix is --redis-prefix.
func readNamespaces(path, defaultPrefix string) (namespaces, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Namespaces []namespace `json:"namespaces"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: data after the JSON object", path)
	}
	if len(file.Namespaces) == 0 {
		return nil, fmt.Errorf("%s: namespaces: at least one is required", path)
	}
	prefixes := []string{defaultPrefix}
	for i := range file.Namespaces {
		n := &file.Namespaces[i]
		fail := func(field, format string, args ...any) error {
			return fmt.Errorf("%s: namespaces[%d] (%s): %s: %s", path, i, n.Name, field, fmt.Sprintf(format, args...))
		}
		if !timer.ValidNamespace(n.Name) {
			return nil, fail("name", "must be 1 to %d of a-z and 0-9, starting with a letter", timer.MaxNamespaceBytes)
		}
		if slices.ContainsFunc(file.Namespaces[:i], func(o namespace) bool { return o.Name == n.Name }) {
			return nil, fail("name", "another entry has this name")
		}
		if n.RedisPrefix == "" {
			n.RedisPrefix = defaultPrefix + n.Name + ":"
		}
		if !slots.ValidPrefix(n.RedisPrefix) {
			return nil, fail("redis_prefix", "must not hold '{' or '}'")
		}
		if slices.Contains(prefixes, n.RedisPrefix) {
			return nil, fail("redis_prefix", "%q is the default namespace's or another's", n.RedisPrefix)
		}
		prefixes = append(prefixes, n.RedisPrefix)
		if len(n.WebhookSecrets) == 0 {
			return nil, fail("webhook_secrets", "at least one is required: a namespace's receivers verify with its own (toc tokens secret makes one)")
		}
		if _, err := webhook.NewClient(webhook.Config{Secrets: n.WebhookSecrets}); err != nil {
			return nil, fail("webhook_secrets", "%v", err)
		}
		for j, h := range n.CallbackHosts {
			if !tochttp.ValidCallbackHost(h) {
				return nil, fail(fmt.Sprintf("callback_hosts[%d]", j), "%q is not a lowercase host name, an address or *.domain", h)
			}
		}
	}
	return file.Namespaces, nil
}

// names are the namespaces' names, in the file's order.
func (ns namespaces) names() []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}

// prefixes are the namespaces' Redis key prefixes, by name.
func (ns namespaces) prefixes() map[string]string {
	out := make(map[string]string, len(ns))
	for _, n := range ns {
		out[n.Name] = n.RedisPrefix
	}
	return out
}

// secrets are the namespaces' webhook secrets, by name.
func (ns namespaces) secrets() map[string][]string {
	out := make(map[string][]string, len(ns))
	for _, n := range ns {
		out[n.Name] = n.WebhookSecrets
	}
	return out
}

// api is what the API enforces of each namespace, by name.
func (ns namespaces) api() map[string]tochttp.Namespace {
	out := make(map[string]tochttp.Namespace, len(ns))
	for _, n := range ns {
		out[n.Name] = tochttp.Namespace{CallbackHosts: n.CallbackHosts}
	}
	return out
}
