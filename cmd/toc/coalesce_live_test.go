package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
)

// Schedule calls made at once by 64 goroutines through a coalescing
// client share batches, and each caller gets what its own call answers
// alone: its job as GET shows it, created false for a repeated key of the
// same content, 409 for a key reused with other content, 400 naming the
// field for an invalid job, while the valid jobs of the same batches are
// stored.
func TestCoalescingClientLive(t *testing.T) {
	p, secret := startDev(t)
	hook := newReceiver(t, secret).srv.URL + "/hook"
	count := &countingTransport{base: http.DefaultTransport}
	c, err := client.New(p.url, client.WithCoalescing(client.Coalescing{}),
		client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, count)}))
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 64, 20
	type call struct {
		req     client.JobRequest
		job     *client.Job
		created bool
		err     error
	}
	calls := make([]call, workers*each)
	for i := range calls {
		r := client.JobRequest{Topic: "coalesced", BizID: uint64(i + 1), Delay: time.Hour, CallbackURL: hook, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		switch {
		case i%97 == 5:
			r.CallbackURL = "ftp://localhost/hook" // invalid: 400 naming callback_url
		case i%97 == 6 || i%97 == 7:
			r.Key, r.BizID, r.Payload = fmt.Sprintf("same-%d", i/97), 1, json.RawMessage(`{"same":true}`) // the same content twice
		case i%97 == 8 || i%97 == 9:
			r.Key = fmt.Sprintf("clash-%d", i/97) // other content under one key
		}
		calls[i].req = r
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(calls); i += workers {
				calls[i].job, calls[i].created, calls[i].err = c.Schedule(t.Context(), calls[i].req)
			}
		})
	}
	wg.Wait()

	byKey := map[string][]int{}
	for i, cl := range calls {
		if cl.req.Key != "" {
			byKey[cl.req.Key] = append(byKey[cl.req.Key], i)
		}
		switch {
		case i%97 == 5:
			if e, ok := errors.AsType[*client.Error](cl.err); !ok || e.Status != 400 || e.Field != "callback_url" {
				t.Errorf("call %d, invalid: %v, want 400 naming callback_url", i, cl.err)
			}
		case cl.req.Key != "":
		case cl.err != nil:
			t.Errorf("call %d: %v", i, cl.err)
		case !cl.created || cl.job.BizID != cl.req.BizID:
			t.Errorf("call %d: job %+v, created %v", i, cl.job, cl.created)
		}
	}
	for key, is := range byKey {
		a, b := calls[is[0]], calls[is[1]]
		if key[:4] == "same" {
			if a.err != nil || b.err != nil || a.job.ID != b.job.ID || a.created == b.created {
				t.Errorf("key %s, same content twice: %v %v, %v %v; want one job, created once", key, a.created, a.err, b.created, b.err)
			}
			continue
		}
		if (a.err == nil) == (b.err == nil) || !errors.Is(cmpErr(a.err, b.err), client.ErrConflict) {
			t.Errorf("key %s, other content: %v, %v; want one created and one 409", key, a.err, b.err)
		}
	}
	// Each answer is the job as toc stores it.
	for i, cl := range calls {
		if cl.job == nil || i%7 != 0 {
			continue
		}
		_, served := p.call(t, "GET", fmt.Sprintf("/v1/jobs/%d", cl.job.ID), nil)
		b, _ := json.Marshal(cl.job)
		var got map[string]any
		json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, served) {
			t.Errorf("call %d's job:\n%s\nGET answers:\n%v", i, b, served)
		}
	}
	singles, batches := count.single.Load(), count.batch.Load()
	t.Logf("%d calls: %d POST /v1/jobs, %d batches", len(calls), singles, batches)
	if batches == 0 || singles+batches >= int64(len(calls)) {
		t.Errorf("%d calls made %d singles and %d batches: not coalesced", len(calls), singles, batches)
	}
}
