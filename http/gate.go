// The gate: tenancy, quotas and the names a request gives are decided
// once, here, for every /v1 route, before its handler runs.
//
// Each route is an op in the table of ops.go: the least role it needs, and
// a read function that decodes and validates the request into what the
// handler takes and returns the claim the request makes: the topics it
// names (and whether it may create them), the job, schedule or group of
// its path, the groups it joins or creates, the callback URLs it gives,
// and the jobs and schedules it adds. The gate then, in this order:
//
//  1. qualifies every topic and group id the claim points at by the
//     token's namespace, in place, so the handler sees only the names toc
//     holds (a bad name is a 400 naming its field);
//  2. checks the callback URLs (private addresses, the namespace's hosts);
//  3. checks scope: a topic outside the token's patterns is a 403, decided
//     from the name alone; a job, schedule or group of the path that the
//     token may not see is a 404 word for word as a missing one (a job
//     of a bulk call's selection, that job's not_found); a group
//     to join that it may not see is the 400 of a missing group;
//  4. checks that each callback URL is given where its topic's way needs
//     one (webhook) and only there (amqp, nats);
//  5. charges the quotas: rate, max_pending, max_topics.
//
// Validation comes before quotas, so a bad request is a 400 whatever the
// token's quotas. A handler cannot skip the gate: the only way to register
// a /v1 route is an op, and an op's handler receives the admitted input.

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// claim is what a request names and adds, as its op's read function
// finds it. Pointers point into the op's input, which the gate qualifies
// in place.
type claim struct {
	// topics are the topics the request names.
	topics []topicRef
	// job is the job of the path, which the token must be able to see.
	job timer.JobID
	// selected are the jobs a bulk call acts on: one the token may not
	// see is that job's not_found (admission.hidden), not the request's.
	selected []timer.JobID
	// schedule is the schedule of the path, likewise.
	schedule timer.ScheduleID
	// groups are the groups the request names.
	groups []groupRef
	// callbacks are the callback URLs the request gives.
	callbacks []callbackRef
	// jobs is how many jobs the request adds as pending, now: they cost
	// the token's rate and max_pending. replayed adds pending jobs that
	// cost only max_pending (a replay is not a new schedule).
	jobs, replayed int
	// schedules is how many schedules the request creates: each costs the
	// rate of one job, and max_pending must have room for one more.
	schedules int
	// everyTopic: the request reads what every topic did, of every
	// namespace (GET /v1/series): only a token that may see every topic
	// may make it (auth.Principal.AllTopics).
	everyTopic bool
}

// topicRef is a topic a request names: by field, and the name as the
// client gave it, which the gate replaces by the topic toc holds.
type topicRef struct {
	field string
	name  *string
	// optional: an empty name is no topic (a filter left out);
	// otherwise it is a 400 naming the field.
	optional bool
	// create: the request creates the topic if it does not exist (a job's
	// first use, a group's completion topic, a schedule's, PUT): it counts
	// under the token's max_topics.
	create bool
	// item is the index of the batch item that names it, when inBatch: a
	// batch with any item outside the token's topics is refused whole,
	// naming each.
	item    int
	inBatch bool
}

// groupUse is what a request does with a group it names.
type groupUse int

const (
	// groupPath: the group of the path, which must be visible (a 404 as a
	// missing one otherwise).
	groupPath groupUse = iota
	// groupJoin: a job joins it: it must exist and be visible; any other
	// is the 400 of a missing group.
	groupJoin
	// groupCreate: created unless it exists; an existing one the token
	// may not see is a 409 that says nothing of it.
	groupCreate
)

// groupRef is a group a request names, by field; the gate replaces the
// id by the one toc holds (timer.QualifiedGroupID).
type groupRef struct {
	field string
	id    *string
	use   groupUse
	// joiners are the items of a batch that join, for their errors (none:
	// the request's one job), and others the ids of those after the first,
	// which the gate qualifies with it.
	joiners []int
	others  []*string
}

// callbackRef is a callback URL a request gives, by field ("" for
// callback_url), and the topic whose job it calls back: a topic
// delivered by webhook needs one, any other refuses one.
type callbackRef struct {
	field string
	url   string
	topic *string
	// item is the batch item that gives it (-1: none).
	item int
}

// admission is what the gate found and charged, for the handler: done
// must be called once the call has stored what it creates (the gate's
// handler does), so that the token's next call counts it.
type admission struct {
	api *API
	// scheduleTopic is the topic of the path's schedule, for the audit
	// log.
	scheduleTopic string
	// hidden are the selected jobs the token may not see, or that do not
	// exist, each with the error GET /v1/jobs/{id} would answer.
	hidden  map[timer.JobID]error
	release []func()
}

// pending charges n more pending jobs to the token's max_pending, for a
// call that adds them one by one (a bulk replay).
func (ad *admission) pending(ctx context.Context, n int) error {
	return ad.api.roomForPending(ctx, n)
}

func (ad *admission) done() {
	for _, f := range ad.release {
		f()
	}
}

// gated is the handler of an op: read decodes and validates the request
// into an In and says what it claims; the gate admits the claim; serve
// answers with the admitted input.
func gated[In any](a *API, read func(*http.Request, *In) (*claim, error), serve func(http.ResponseWriter, *http.Request, *In, *admission)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in := new(In)
		c, err := read(r, in)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		ad, err := a.admit(r.Context(), c)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		defer ad.done()
		serve(w, r, in, ad)
	}
}

// admit is the gate: it qualifies, checks scope and charges quotas for c,
// in that order, as the file's comment says.
func (a *API) admit(ctx context.Context, c *claim) (*admission, error) {
	ad := &admission{api: a}
	if c == nil {
		return ad, nil
	}
	ns := namespaceOf(ctx)
	var bad []timer.ItemError
	for _, t := range c.topics {
		q, err := qualify(ctx, t.field, *t.name)
		if err == nil && q == "" && !t.optional {
			err = &timer.FieldError{Field: t.field, Message: "a topic name is required"}
		}
		switch {
		case err == nil:
			*t.name = q
		case t.inBatch:
			bad = append(bad, timer.ItemError{Index: t.item, Err: err})
		default:
			return nil, err
		}
	}
	if bad != nil {
		return nil, &timer.BatchError{Items: bad}
	}
	for _, g := range c.groups {
		*g.id = timer.QualifiedGroupID(ns, *g.id)
		for _, o := range g.others {
			*o = *g.id
		}
	}
	if err := a.admitCallbacks(ctx, c.callbacks); err != nil {
		return nil, err
	}
	if err := a.admitScope(ctx, c, ad); err != nil {
		return nil, err
	}
	if err := a.admitWays(ctx, c.callbacks); err != nil {
		return nil, err
	}
	if err := a.admitQuotas(ctx, c, ad); err != nil {
		ad.done()
		return nil, err
	}
	return ad, nil
}

// admitCallbacks checks each callback URL given once (most batches
// share one); a refused one of a batch item is that item's error.
func (a *API) admitCallbacks(ctx context.Context, refs []callbackRef) error {
	checked := map[string]error{}
	return eachCallback(refs, func(cb callbackRef) error {
		if cb.url == "" {
			return nil
		}
		err, seen := checked[cb.url]
		if !seen {
			err = a.checkCallback(ctx, cb.url)
			checked[cb.url] = err
		}
		return err
	})
}

// admitWays checks that a callback URL is given where its topic's way
// needs one and only there. It runs after the scope check: the way of a
// topic the token may not use is none of its business.
func (a *API) admitWays(ctx context.Context, refs []callbackRef) error {
	ways := map[string]timer.Way{}
	return eachCallback(refs, func(cb callbackRef) error { return a.callbackNeeded(ctx, cb, ways) })
}

// eachCallback runs check on each of refs: an error of the request's own
// callback is returned at once, those of batch items together, each
// naming the field as the request gives it.
func eachCallback(refs []callbackRef, check func(callbackRef) error) error {
	var items []timer.ItemError
	for _, cb := range refs {
		err := check(cb)
		if err == nil {
			continue
		}
		if fe, ok := errors.AsType[*timer.FieldError](err); ok && cb.field != "" && fe.Field == "callback_url" {
			err = &timer.FieldError{Field: cb.field, Message: fe.Message}
		}
		if cb.item < 0 {
			return err
		}
		items = append(items, timer.ItemError{Index: cb.item, Err: err})
	}
	if items != nil {
		return &timer.BatchError{Items: items}
	}
	return nil
}

// callbackNeeded refuses cb's URL when its topic's way takes none and its
// absence when the way is a webhook; ways caches each topic's way for
// the request.
func (a *API) callbackNeeded(ctx context.Context, cb callbackRef, ways map[string]timer.Way) error {
	way := timer.WayWebhook
	if cb.topic != nil && *cb.topic != "" {
		var ok bool
		if way, ok = ways[*cb.topic]; !ok {
			d, err := a.jobs.DestinationOf(ctx, *cb.topic)
			if err != nil {
				return err
			}
			way = d.Of()
			ways[*cb.topic] = way
		}
	}
	switch {
	case way == timer.WayWebhook && cb.url == "":
		return &timer.FieldError{Field: "callback_url", Message: "required: the topic delivers by webhook"}
	case way != timer.WayWebhook && cb.url != "":
		return &timer.FieldError{Field: "callback_url", Message: fmt.Sprintf("must be left out: topic %s delivers by %s, not to a URL", shownTopic(*cb.topic), way)}
	}
	return nil
}

// admitScope refuses what the token may not use or see.
func (a *API) admitScope(ctx context.Context, c *claim, ad *admission) error {
	p := principalFrom(ctx)
	if c.everyTopic && p != nil && !p.AllTopics() {
		return fmt.Errorf("token %s may not see every topic, and this covers them all: ask for a topic's (GET /v1/topics/{topic}/series): %w", p.Name, errForbidden)
	}
	var refused []timer.ItemError
	for _, t := range c.topics {
		if *t.name == "" {
			continue
		}
		err := allowTopic(ctx, *t.name)
		switch {
		case err == nil:
		case t.inBatch:
			refused = append(refused, timer.ItemError{Index: t.item, Err: err})
		default:
			return err
		}
	}
	if refused != nil {
		return &forbiddenItems{principal: p.Name, items: refused}
	}
	if c.job != 0 {
		if err := a.visibleJob(ctx, c.job); err != nil {
			return err
		}
	}
	for _, id := range c.selected {
		err := a.visibleJob(ctx, id)
		if errors.Is(err, timer.ErrNotFound) {
			if ad.hidden == nil {
				ad.hidden = map[timer.JobID]error{}
			}
			ad.hidden[id] = jobNotFound(id)
			continue
		}
		if err != nil {
			return err
		}
	}
	if c.schedule != 0 {
		topic, err := a.visibleSchedule(ctx, c.schedule)
		if err != nil {
			return err
		}
		ad.scheduleTopic = topic
	}
	for _, g := range c.groups {
		if err := a.admitGroup(ctx, p, g, &refused); err != nil {
			return err
		}
	}
	if refused != nil {
		return &timer.BatchError{Items: refused}
	}
	return nil
}

// admitGroup checks one group a request names against what it does with
// it; the refusals of a batch's joining items go to refused.
func (a *API) admitGroup(ctx context.Context, p *auth.Principal, g groupRef, refused *[]timer.ItemError) error {
	if p == nil || p.AllTopics() {
		// Every group it may name is its own (a group's id and topic are
		// of one namespace); the domain answers one that is missing.
		return nil
	}
	groups, ok := a.jobs.(Groups)
	if !ok {
		return errNoGroups
	}
	stored, err := groups.GetGroup(ctx, *g.id)
	missing := errors.Is(err, timer.ErrNotFound)
	if err != nil && !missing {
		return err
	}
	visible := !missing && p.Allows(groupTopic(stored))
	switch {
	case visible:
		return nil
	case g.use == groupPath:
		return fmt.Errorf("get group %q: %w", timer.GroupName(*g.id), timer.ErrNotFound)
	case g.use == groupCreate && !missing:
		return fmt.Errorf("group id %q is taken; choose another: %w", timer.GroupName(*g.id), timer.ErrConflict)
	case g.use == groupJoin:
		err := timer.UnknownGroup(g.field, *g.id)
		if len(g.joiners) == 0 {
			return err
		}
		for _, i := range g.joiners {
			*refused = append(*refused, timer.ItemError{Index: i, Err: err})
		}
	}
	return nil
}

// admitQuotas charges the token's quotas: rate, then max_pending, then
// max_topics, whose lock it leaves in ad until the call is done.
func (a *API) admitQuotas(ctx context.Context, c *claim, ad *admission) error {
	if principalFrom(ctx) == nil {
		return nil
	}
	if n := c.jobs + c.schedules; n > 0 {
		if err := a.allowRate(ctx, n); err != nil {
			return err
		}
	}
	if n := c.jobs + c.replayed; n > 0 {
		if err := a.roomForPending(ctx, n); err != nil {
			return err
		}
	}
	if c.schedules > 0 {
		if err := a.roomForSchedule(ctx); err != nil {
			return err
		}
	}
	var creates []string
	for _, t := range c.topics {
		if t.create && *t.name != "" {
			creates = append(creates, *t.name)
		}
	}
	if len(creates) == 0 {
		return nil
	}
	done, err := a.roomForTopics(ctx, creates)
	if qe, ok := errors.AsType[*quotaError](err); ok {
		for _, t := range c.topics { // name the field that would create it
			if *t.name == qe.topic {
				qe.field = t.field
				break
			}
		}
	}
	if err != nil {
		return err
	}
	ad.release = append(ad.release, done)
	return nil
}

// forbiddenItems refuses a batch some of whose jobs are of topics the
// token may not use: 403 naming them, nothing stored.
type forbiddenItems struct {
	principal string
	items     []timer.ItemError
}

func (e *forbiddenItems) Error() string {
	return fmt.Sprintf("%d of the batch's jobs are of topics token %s may not use (see items); nothing was stored", len(e.items), e.principal)
}

func (e *forbiddenItems) Unwrap() error { return errForbidden }
