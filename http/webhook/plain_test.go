package webhook_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/http/webhook"
)

// The tests of http:// callbacks' own transport; the other tests of this
// package call http:// receivers too, so they test it as well.

// Cancelling the call's context (the end of a shutdown's grace) ends a
// call in flight, before its deadline, with the context's error.
func TestWebhookCancelInFlight(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := newServer(t, &recorder{reply: func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}})
	t.Cleanup(func() { close(release) })
	wh := newClient(t, webhook.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	start := time.Now()
	err := wh.Fire(ctx, delivery(testJob(srv.URL), 1))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("Fire returned after %v, want it soon after the cancel, not at the deadline", elapsed)
	}
}

// oneShot is a receiver that answers each connection's first request
// with reply, then closes the connection without saying so, as a
// receiver whose keep-alive timeout has passed does.
type oneShot struct {
	ln       net.Listener
	reply    string
	conns    atomic.Int32
	requests atomic.Int32
	wg       sync.WaitGroup
}

func newOneShot(t *testing.T, reply string) *oneShot {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &oneShot{ln: ln, reply: reply}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Go(func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				s.requests.Add(1)
				_, _ = io.WriteString(c, s.reply)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// A request on a kept-alive connection that the receiver has closed is
// sent again on a new one: the attempt succeeds, and the receiver gets
// each call once.
func TestWebhookStaleConnection(t *testing.T) {
	srv := newOneShot(t, "HTTP/1.1 204 No Content\r\n\r\n")
	wh := newClient(t, webhook.Config{})
	url := "http://" + srv.ln.Addr().String() + "/hook"
	for i := range 3 {
		if err := wh.Fire(t.Context(), delivery(testJob(url), 1)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := srv.requests.Load(); n != 3 {
		t.Errorf("the receiver got %d requests, want 3", n)
	}
	if n := srv.conns.Load(); n != 3 {
		t.Errorf("the receiver saw %d connections, want 3 (one a call)", n)
	}
}

// An answer whose body is longer than MaxResponseBytes still counts as
// its status says; the rest of the body is not read, so its connection
// is closed, not kept for the next call.
func TestWebhookLongAnswer(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strings.Repeat("z", 256<<10))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	wh := newClient(t, webhook.Config{MaxResponseBytes: 1 << 10})
	for i := range 2 {
		if err := wh.Fire(t.Context(), delivery(testJob(srv.URL), 1)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("two calls opened %d connections, want 2", n)
	}
}

// An answer that is not HTTP fails the attempt with an error that quotes
// no more than its start.
func TestWebhookMalformedAnswer(t *testing.T) {
	srv := newOneShot(t, strings.Repeat("z", 20<<10))
	wh := newClient(t, webhook.Config{})
	err := wh.Fire(t.Context(), delivery(testJob("http://"+srv.ln.Addr().String()+"/hook"), 1))
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("err = %.500v (%d bytes), want an error of at most 400 bytes", err, len(fmt.Sprint(err)))
	}
}

// The request's head, written by hand for http:// callbacks, as a
// receiver reads it: the path with its query, the host, every header
// once, the body's length; a control character in a value (a User-Agent
// set with CR LF) arrives as a space and cannot add a header.
func TestWebhookRequestHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan *http.Request, 2)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(strings.NewReader(string(body)))
			got <- req
			if _, err := io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"); err != nil {
				return
			}
		}
	}()
	wh := newClient(t, webhook.Config{UserAgent: "toc\r\nX-Injected: 1\x7f"})
	j := testJob("http://" + ln.Addr().String() + "/hook/a%2Fb?token=abc&x=1")
	for attempt := 1; attempt <= 2; attempt++ { // the second on the kept-alive connection
		if err := wh.Fire(t.Context(), delivery(j, attempt)); err != nil {
			t.Fatalf("Fire %d: %v", attempt, err)
		}
		req := <-got
		if req.Method != http.MethodPost || req.RequestURI != "/hook/a%2Fb?token=abc&x=1" || req.Host != ln.Addr().String() || req.Proto != "HTTP/1.1" {
			t.Errorf("request line and host: %s %s %s, host %s", req.Method, req.RequestURI, req.Proto, req.Host)
		}
		body, _ := io.ReadAll(req.Body)
		if req.ContentLength != int64(len(body)) || !strings.HasPrefix(string(body), `{"id":"1234567890123"`) {
			t.Errorf("Content-Length %d, body %q", req.ContentLength, body)
		}
		if v := req.Header.Values("User-Agent"); len(v) != 1 || v[0] != "toc  X-Injected: 1" {
			t.Errorf("User-Agent %q, want the value with its control characters as spaces", v)
		}
		if v := req.Header.Get("X-Injected"); v != "" {
			t.Errorf("a value added the header X-Injected: %q", v)
		}
		for _, name := range []string{"Content-Type", "Idempotency-Key", "webhook-id", "webhook-timestamp", "webhook-signature", "toc-attempt", "toc-due-at", "toc-lateness-ms"} {
			if v := req.Header.Values(name); len(v) != 1 || v[0] == "" {
				t.Errorf("header %s: %q, want one value", name, v)
			}
		}
		if v := req.Header.Get("toc-attempt"); v != strconv.Itoa(attempt) {
			t.Errorf("toc-attempt %q, want %d", v, attempt)
		}
	}
}
