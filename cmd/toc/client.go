package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client calls a running toc's REST API.
type client struct {
	server string
	token  string
	http   *http.Client
	stdout io.Writer
	stderr io.Writer
}

// do sends a request and prints the answer's JSON; a 4xx or 5xx answer is
// printed to stderr and ends the command with exit code 1.
func (c *client) do(ctx context.Context, method, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.server, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = append(pretty.Bytes(), '\n')
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintf(c.stderr, "%s %s: %s\n%s", method, path, resp.Status, out)
		return exitError{1}
	}
	_, err = c.stdout.Write(out)
	return err
}

func runClient(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	usages := map[string]string{
		"schedule": "schedule --topic T --callback URL (--delay D | --at RFC3339) [--payload JSON] [--key K] [--biz-id N] [--max-attempts N]",
		"get":      "get [flags] JOB_ID",
		"cancel":   "cancel [flags] JOB_ID",
		"dead":     "dead list --topic T [--limit N] [--after CURSOR] | dead replay JOB_ID [--delay D] | dead purge JOB_ID",
	}
	sub := ""
	if cmd == "dead" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintln(stderr, "usage: toc "+usages["dead"])
			return exitError{2}
		}
		sub, args = args[0], args[1:]
	}
	fs := newFlagSet(cmd, usages[cmd])
	fs.SetOutput(stderr)
	server := fs.string("server", "http://127.0.0.1:8080", "toc's address")
	token := fs.string("token", "", "bearer token")
	timeout := fs.duration("timeout", 30*time.Second, "request timeout")
	var (
		topic, callback, at, payload, key, after *string
		delay                                    *time.Duration
		bizID, maxAttempts, limit                *int
	)
	switch {
	case cmd == "schedule":
		topic = fs.string("topic", "", "topic of the job")
		callback = fs.string("callback", "", "callback URL")
		delay = fs.duration("delay", 0, "fire after this long")
		at = fs.string("at", "", "fire at this RFC 3339 time (instead of --delay)")
		payload = fs.string("payload", "", "payload, a JSON value")
		key = fs.string("key", "", "idempotency key")
		bizID = fs.int("biz-id", 0, "business id (slot basis)")
		maxAttempts = fs.int("max-attempts", 0, "attempts before the job is dead (default 16)")
	case sub == "list":
		topic = fs.string("topic", "", "topic")
		limit = fs.int("limit", 100, "page size")
		after = fs.string("after", "", "cursor of the next page")
	case sub == "replay":
		delay = fs.duration("delay", 0, "fire after this long (default: now)")
	}
	// Flags may come before or after the job id.
	if err := fs.parse(args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) > 0 && len(pos) < len(args) {
		if err := fs.parse(pos[1:]); err != nil {
			return err
		}
		pos = append(pos[:1], fs.Args()...)
	}
	c := &client{server: *server, token: *token, http: &http.Client{Timeout: *timeout}, stdout: stdout, stderr: stderr}
	id := func() (string, error) {
		if len(pos) != 1 {
			return "", fmt.Errorf("usage: toc %s", usages[cmd])
		}
		return url.PathEscape(pos[0]), nil
	}
	switch {
	case cmd == "schedule":
		body := map[string]any{"topic": *topic, "callback_url": *callback}
		if *at != "" {
			body["fire_at"] = *at
		} else {
			body["delay_ms"] = delay.Milliseconds()
		}
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				return errors.New("--payload is not valid JSON")
			}
			body["payload"] = json.RawMessage(*payload)
		}
		if *key != "" {
			body["key"] = *key
		}
		if *bizID != 0 {
			body["biz_id"] = *bizID
		}
		if *maxAttempts != 0 {
			body["max_attempts"] = *maxAttempts
		}
		return c.do(ctx, http.MethodPost, "/v1/jobs", body)
	case cmd == "get", cmd == "cancel":
		jid, err := id()
		if err != nil {
			return err
		}
		method := http.MethodGet
		if cmd == "cancel" {
			method = http.MethodDelete
		}
		return c.do(ctx, method, "/v1/jobs/"+jid, nil)
	case sub == "list":
		q := url.Values{"topic": {*topic}, "limit": {fmt.Sprint(*limit)}}
		if *after != "" {
			q.Set("after", *after)
		}
		return c.do(ctx, http.MethodGet, "/v1/deadletters?"+q.Encode(), nil)
	case sub == "replay":
		jid, err := id()
		if err != nil {
			return err
		}
		return c.do(ctx, http.MethodPost, "/v1/deadletters/"+jid+"/replay", map[string]any{"delay_ms": delay.Milliseconds()})
	case sub == "purge":
		jid, err := id()
		if err != nil {
			return err
		}
		return c.do(ctx, http.MethodDelete, "/v1/deadletters/"+jid, nil)
	}
	fmt.Fprintln(stderr, "usage: toc "+usages["dead"])
	return exitError{2}
}
