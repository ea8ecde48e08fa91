// Command example is a client of toc's REST API written against the Go
// client that oapi-codegen generates from http/openapi.json at its
// defaults (package goclient, toc.gen.go): it schedules a job whose
// biz_id is the largest unsigned 64-bit integer, reads it back, finds it
// by status (the client sends a list of statuses as the parameter
// repeated, status=a&status=b, OpenAPI's default form), cancels it, finds
// it among the cancelled jobs and checks that a second cancel is a 409.
//
//	TOC_URL=http://127.0.0.1:8080 TOC_TOKEN=... go run ./example
//
// It prints each step and exits 1 on the first mismatch.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/http/contract/goclient"
)

// bizID is the largest unsigned 64-bit integer, which toc reads and
// writes as a decimal string.
const bizID = "18446744073709551615"

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mismatch:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(ctx context.Context) error {
	base := strings.TrimRight(cmp.Or(os.Getenv("TOC_URL"), "http://127.0.0.1:8080"), "/")
	token := os.Getenv("TOC_TOKEN")
	c, err := goclient.NewClientWithResponses(base, goclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	if err != nil {
		return err
	}
	const topic = "contract-go"
	// The job is cancelled long before it is due, so nothing is called;
	// toc serve refuses private addresses unless --allow-private-callbacks.
	callback := cmp.Or(os.Getenv("TOC_CALLBACK_URL"), "http://127.0.0.1:9/toc-example")
	biz := bizID
	delay := goclient.DelayMS(3_600_000)

	created, err := c.ScheduleJobWithResponse(ctx, nil, goclient.NewJob{
		Topic:       topic,
		BizId:       &biz,
		DelayMs:     &delay,
		CallbackUrl: &callback,
		Payload:     map[string]any{"from": "goclient"},
	})
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	if created.JSON201 == nil {
		return refused("schedule", created.HTTPResponse, created.Body)
	}
	job := created.JSON201
	if err := check(job, job.Id, goclient.Pending, "schedule"); err != nil {
		return err
	}
	id := job.Id
	fmt.Printf("scheduled job %s in %s, due %s, biz_id %s\n", id, job.Topic, job.FireAt.Format(time.RFC3339Nano), job.BizId)

	got, err := c.GetJobWithResponse(ctx, id)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	if got.JSON200 == nil {
		return refused("read back", got.HTTPResponse, got.Body)
	}
	if err := check(got.JSON200, id, goclient.Pending, "read back"); err != nil {
		return err
	}
	fmt.Printf("read back: status %s, biz_id %s round-trips exactly\n", got.JSON200.Status, got.JSON200.BizId)

	// find lists the topic's jobs of biz_id in the statuses given.
	find := func(what string, statuses ...goclient.Status) ([]goclient.Job, error) {
		q := bizID
		found, err := c.FindJobsWithResponse(ctx, &goclient.FindJobsParams{Topic: topic, BizId: &q, Status: &statuses})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if found.JSON200 == nil {
			return nil, refused(what, found.HTTPResponse, found.Body)
		}
		fmt.Printf("%s: GET %s: %d job(s)\n", what, found.HTTPResponse.Request.URL.RequestURI(), len(found.JSON200.Jobs))
		return found.JSON200.Jobs, nil
	}
	has := func(jobs []goclient.Job) bool {
		return slices.ContainsFunc(jobs, func(j goclient.Job) bool { return j.Id == id })
	}
	jobs, err := find("find pending or cancelled", goclient.Pending, goclient.Cancelled)
	if err != nil {
		return err
	}
	if !has(jobs) {
		return fmt.Errorf("find pending or cancelled: job %s is not among %d", id, len(jobs))
	}

	cancelled, err := c.CancelJobWithResponse(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if cancelled.JSON200 == nil {
		return refused("cancel", cancelled.HTTPResponse, cancelled.Body)
	}
	if err := check(cancelled.JSON200, id, goclient.Cancelled, "cancel"); err != nil {
		return err
	}
	fmt.Printf("cancelled: status %s\n", cancelled.JSON200.Status)

	if jobs, err = find("find pending or firing", goclient.Pending, goclient.Firing); err != nil {
		return err
	}
	if has(jobs) {
		return fmt.Errorf("find pending or firing: cancelled job %s is among them", id)
	}
	if jobs, err = find("find cancelled or done", goclient.Cancelled, goclient.Done); err != nil {
		return err
	}
	if !has(jobs) {
		return fmt.Errorf("find cancelled or done: job %s is not among %d", id, len(jobs))
	}

	again, err := c.CancelJobWithResponse(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("cancel again: %w", err)
	}
	if again.JSON409 == nil {
		return refused("cancel again", again.HTTPResponse, again.Body)
	}
	if again.JSON409.Error.Code != goclient.ErrorDetailCodeConflict {
		return fmt.Errorf("cancel again: code %s, want conflict", again.JSON409.Error.Code)
	}
	fmt.Printf("cancel again: 409 %s\n", again.JSON409.Error.Code)
	return nil
}

// check reports how j differs from the job id in status, with its
// biz_id intact.
func check(j *goclient.Job, id goclient.JobID, status goclient.Status, when string) error {
	var errs []error
	if j.Id != id {
		errs = append(errs, fmt.Errorf("id %s, want %s", j.Id, id))
	}
	if j.BizId != bizID {
		errs = append(errs, fmt.Errorf("biz_id %s, want %s", j.BizId, bizID))
	}
	if j.Status != status {
		errs = append(errs, fmt.Errorf("status %s, want %s", j.Status, status))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", when, err)
	}
	return nil
}

// refused describes an answer that was not the one expected.
func refused(what string, resp *http.Response, body []byte) error {
	return fmt.Errorf("%s: HTTP %d %s", what, resp.StatusCode, body)
}
