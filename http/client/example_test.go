package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toc-project/toc/http/client"
)

// Schedule a timeout for an order, and cancel it once the order is paid,
// by the order's id rather than the job's.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("TOC_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Schedule(ctx, client.JobRequest{
		Topic:       "orders",
		Key:         "close-order-42",
		BizID:       42,
		Delay:       30 * time.Minute,
		CallbackURL: "https://orders.internal/hooks/close",
		Payload:     json.RawMessage(`{"order":42}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scheduled", job.ID, "for", job.FireAt)

	res, err := c.CancelMatching(ctx, client.Match{Topic: "orders", BizID: 42})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("cancelled", res.Cancelled, "too late", res.TooLate)
}

// A cancel that comes too late says why.
func ExampleClient_Cancel() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	_, err := c.Cancel(ctx, 4737258989562101760)
	switch {
	case err == nil:
		fmt.Println("cancelled: it will never fire")
	case errors.Is(err, client.ErrInFlight):
		fmt.Println("an attempt is under way; the job may still end done")
	case errors.Is(err, client.ErrAlreadyFired):
		fmt.Println("too late: it fired")
	case errors.Is(err, client.ErrNotFound):
		fmt.Println("no such job")
	default:
		log.Fatal(err)
	}
}

// Every pending job of a business object, page after page.
func ExampleClient_SearchAll() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	q := client.SearchQuery{Topic: "orders", BizID: 42, Statuses: []client.Status{client.StatusPending}}
	for job, err := range c.SearchAll(ctx, q) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(job.ID, job.FireAt)
	}
}

// Change some of a topic's settings and put one back to its default.
func ExampleClient_PatchTopic() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	t, err := c.PatchTopic(ctx, "flood", client.TopicPatch{
		RateLimit:   client.Set(2000.0),
		MaxInFlight: client.Reset[int](),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.RateLimit, t.Burst, t.MaxInFlight)
}

// Replay the dead letters of one group, a thousand a call, until none is
// left.
func ExampleClient_ReplayMatching() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:8080")
	sum, err := c.DeadSummary(ctx, client.DeadFilter{Topic: "orders"})
	if err != nil || len(sum.Groups) == 0 {
		return
	}
	for {
		res, err := c.ReplayMatching(ctx, client.DeadBulk{Topic: "orders", Signature: sum.Groups[0].Signature, Rate: 200})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("replayed", res.Replayed)
		if !res.More {
			break
		}
	}
}

// A client that tries each call at most twice, waiting at most 2 s, and
// gives up on the whole within 5 s.
func ExampleWithRetry() {
	c, _ := client.New("http://127.0.0.1:8080",
		client.WithRetry(client.RetryPolicy{MaxAttempts: 2, MaxDelay: 2 * time.Second}),
		client.WithHTTPClient(&http.Client{Timeout: 3 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Cluster(ctx); err != nil {
		log.Print(err)
	}
}

// An API error is an *Error, compared with the sentinels.
func ExampleError() {
	toc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"job 7: not found"}}`)
	}))
	defer toc.Close()
	c, _ := client.New(toc.URL)

	_, err := c.Get(context.Background(), 7)
	fmt.Println(errors.Is(err, client.ErrNotFound))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code)
	}
	fmt.Println(err)
	// Output:
	// true
	// 404 not_found
	// GET /v1/jobs/7: 404 not_found: job 7: not found
}

// Work the jobs of a pull topic, four at a time, until SIGINT or SIGTERM;
// a job whose order service is down is retried in a minute.
func ExampleClient_Work() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, _ := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("TOC_TOKEN")))
	err := c.Work(ctx, "orders", func(ctx context.Context, l client.Lease) error {
		var order struct{ Order int }
		if err := json.Unmarshal(l.Job.Payload, &order); err != nil {
			return err // nacked: retried by the topic's backoff
		}
		if err := closeOrder(ctx, order.Order); err != nil {
			return client.RetryAfter(time.Minute, err)
		}
		return nil // acked: the job is done
	}, client.WorkOptions{Concurrency: 4})
	if err != nil {
		log.Fatal(err) // a 4xx: not a pull topic, say
	}
}

func closeOrder(ctx context.Context, order int) error { return nil }
