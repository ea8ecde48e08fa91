// Groups: one main task, many sub-tasks. A group is created first, open;
// jobs join it while it is open; it is sealed once it has every member;
// and once sealed and every member has ended, it completes, once, and its
// on_complete callback is scheduled as an ordinary job.

package timer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds and names of groups.
const (
	// MaxGroupIDBytes bounds a group id as a client gives it, in bytes:
	// the column that holds it (toc_jobs.group_id, toc_groups.group_id)
	// holds it qualified by its namespace (QualifiedGroupID), and
	// "group:<id>:complete", the key of its completion job (GroupKey), fits
	// MaxKeyBytes.
	MaxGroupIDBytes = 100
	// MaxStoredGroupIDBytes bounds a group id as toc stores it: a client's
	// id qualified by the longest namespace.
	MaxStoredGroupIDBytes = MaxNamespaceBytes + len(GroupNamespaceSep) + MaxGroupIDBytes
	// DefaultGroupTopic is the topic of a completion job whose group
	// names none.
	DefaultGroupTopic = "groups"

	groupKeyPrefix = "group:"
	groupKeySuffix = ":complete"
)

// GroupNamespaceSep parts a namespace from a client's group id in the id
// toc stores for it (QualifiedGroupID). It is the unit separator, a
// control character, which no client's id holds (CheckGroupID): a
// client's id may hold a dot, so "<ns>.<id>" could be some id of the
// default namespace, but no stored id of another namespace can.
const GroupNamespaceSep = "\x1f"

// QualifiedGroupID returns the id toc stores for group id of namespace
// ns: id itself in the default namespace (""), so that the groups made
// before namespaces keep their ids, and "<ns>\x1f<id>" in another. The
// same id in two namespaces is two groups.
func QualifiedGroupID(ns, id string) string {
	if ns == "" {
		return id
	}
	return ns + GroupNamespaceSep + id
}

// SplitGroupID returns the namespace ("" for the default) and the
// client's id of a group id as toc stores it.
func SplitGroupID(stored string) (ns, id string) {
	if ns, id, ok := strings.Cut(stored, GroupNamespaceSep); ok {
		return ns, id
	}
	return "", stored
}

// GroupName returns the id a client knows the group stored as stored by:
// its id without its namespace. Answers, error messages and logs show it.
func GroupName(stored string) string {
	_, id := SplitGroupID(stored)
	return id
}

// GroupKey is the idempotency key of group id's completion job: however
// many times the completion is scheduled (a crash, a sweep, two members),
// the key makes it one job. It holds the client's id (GroupName): the job
// is in the group's on_complete topic, which is of the group's namespace,
// so the groups of two namespaces cannot share a key, and a key holds no
// control character. It is at most MaxKeyBytes.
func GroupKey(id string) string { return groupKeyPrefix + GroupName(id) + groupKeySuffix }

// CheckGroupID returns a *FieldError naming field unless id is a group id
// as a client gives it: 1 to MaxGroupIDBytes bytes of UTF-8 without
// control characters.
func CheckGroupID(id, field string) error {
	switch {
	case id == "":
		return invalid(field, "required")
	case len(id) > MaxGroupIDBytes:
		return invalid(field, "longer than %d bytes", MaxGroupIDBytes)
	case !ValidKey(id):
		return invalid(field, "must be UTF-8 without control characters (bytes below 0x20, and 0x7f)")
	}
	return nil
}

// CheckQualifiedGroupID is CheckGroupID of a group id as toc stores it
// (QualifiedGroupID): a client's id, qualified by a valid namespace unless
// it is of the default one. What the client gave is checked at the edge,
// with CheckGroupID; this is what the domain and the task stores check.
func CheckQualifiedGroupID(stored, field string) error {
	ns, id := SplitGroupID(stored)
	if strings.Contains(stored, GroupNamespaceSep) && !ValidNamespace(ns) {
		return invalid(field, "has no valid namespace")
	}
	return CheckGroupID(id, field)
}

// UnknownGroup is the error of a request that names, in field, a group
// that does not exist: the API answers a group its token may not see with
// the same words.
func UnknownGroup(field, id string) error {
	return invalid(field, "unknown group %q; create it first (POST /v1/groups)", GroupName(id))
}

// Group is a set of jobs whose end is announced once: when it is sealed
// and every member has ended (Status.Ended), it completes, and its
// OnComplete callback, if any, is scheduled as a job carrying the counts
// of its members by status.
//
// Members join only an open group, so that completion is never declared
// while members are still being added: a job that joins is committed,
// then the group is read again, and a job that finds it sealed by then is
// taken back (Unwriter) and refused. Since the seal is committed before
// any completion check reads the members, a member either was committed
// before that check or is taken back.
type Group struct {
	ID         string
	OnComplete *GroupCallback // nil: none
	CreatedAt  time.Time
	// SealedAt is when the group stopped taking members (zero: open).
	SealedAt time.Time
	// CompletedAt is when the group was found complete (zero: not yet),
	// and Counts its members by status then.
	CompletedAt time.Time
	Counts      map[Status]int64
	// CompletionJob is the job of the OnComplete callback, once scheduled.
	CompletionJob JobID
}

// GroupCallback is the job a group schedules when it completes.
type GroupCallback struct {
	// Topic of the completion job (default DefaultGroupTopic, of the
	// group's namespace); a topic of another namespace is refused.
	Topic       string
	CallbackURL string
	// Payload, when set, is carried as the "payload" of the completion
	// job's payload, beside the counts.
	Payload []byte
}

// GroupStore keeps groups and counts their members.
//
// Groups live in one place (with several task store shards, shard 0);
// their members may be in every shard, and GroupLive and GroupCounts read
// them all.
type GroupStore interface {
	// CreateGroup stores a new open group, or returns an error wrapping
	// ErrConflict when one of that id exists.
	CreateGroup(ctx context.Context, g *Group) error
	// GetGroup returns one group, or an error wrapping ErrNotFound.
	GetGroup(ctx context.Context, id string) (*Group, error)
	// SealGroup sets the seal time of group id to now unless it is sealed,
	// and returns the group; an unknown one wraps ErrNotFound.
	SealGroup(ctx context.Context, id string, now time.Time) (*Group, error)
	// CompleteGroup records that group id completed at now with counts,
	// on the condition that it is sealed and not completed, in one
	// statement: of two calls, one at most reports true.
	CompleteGroup(ctx context.Context, id string, counts map[Status]int64, now time.Time) (bool, error)
	// SetGroupJob records the job of group id's completion callback.
	SetGroupJob(ctx context.Context, id string, job JobID) error
	// GroupLive reports whether group id has a member that has not ended
	// (LiveStatuses), without counting them.
	GroupLive(ctx context.Context, id string) (bool, error)
	// GroupCounts counts group id's members by status; statuses without
	// members are left out.
	GroupCounts(ctx context.Context, id string) (map[Status]int64, error)
	// UnfinishedGroups returns up to limit sealed groups with an id above
	// after, by id, that are not completed or whose completion job is not
	// recorded: what a sweep must look at again.
	UnfinishedGroups(ctx context.Context, after string, limit int) ([]*Group, error)
}

// Unwriter takes back jobs just inserted, before they were indexed: the
// members that joined a group sealed meanwhile. It deletes the rows of
// ids that are still pending and never fired, and returns how many.
type Unwriter interface {
	Unwrite(ctx context.Context, ids []JobID) (int, error)
}

// groupSealedError is why a job may not join a group, or a group be
// created again: it is sealed. It wraps ErrConflict.
type groupSealedError struct{ id string }

func (e *groupSealedError) Error() string {
	return fmt.Sprintf("group %q is sealed and takes no more jobs", GroupName(e.id))
}

func (e *groupSealedError) Unwrap() error { return ErrConflict }

// IsGroupSealed reports whether err says a job could not join a sealed
// group.
func IsGroupSealed(err error) bool {
	_, ok := errors.AsType[*groupSealedError](err)
	return ok
}

// groups returns the store's groups, or an error naming field when the
// store keeps none.
func (s *Scheduler) groupStore(field string) (GroupStore, error) {
	gs, ok := s.store.(GroupStore)
	if !ok {
		return nil, invalid(field, "this task store keeps no groups")
	}
	return gs, nil
}

// CreateGroup stores a new open group. A group of that id that exists
// with the same callback, still open, is answered as it is (created
// false), so that a retried create is harmless; otherwise an existing id
// is an error wrapping ErrConflict.
func (s *Scheduler) CreateGroup(ctx context.Context, g Group) (*Group, bool, error) {
	gs, err := s.groupStore("id")
	if err != nil {
		return nil, false, err
	}
	if err := CheckQualifiedGroupID(g.ID, "id"); err != nil {
		return nil, false, err
	}
	if cb := g.OnComplete; cb != nil {
		// The completion job is in the group's namespace, where its key
		// (GroupKey, the client's id) is the group's alone.
		ns, _ := SplitGroupID(g.ID)
		if cb.Topic == "" {
			cb.Topic = QualifiedTopic(ns, DefaultGroupTopic)
		}
		if !ValidTopic(cb.Topic) {
			return nil, false, invalid("on_complete.topic", "must match ^[a-z0-9][a-z0-9_-]{0,63}$")
		}
		if tns, _ := SplitTopic(cb.Topic); tns != ns {
			return nil, false, invalid("on_complete.topic", "must be a topic of the group's namespace")
		}
		if cb.CallbackURL == "" {
			return nil, false, invalid("on_complete.callback_url", "required")
		}
		if len(cb.Payload) > MaxPayloadBytes/2 {
			return nil, false, invalid("on_complete.payload", "larger than %d bytes", MaxPayloadBytes/2)
		}
		if s.cfg.NoAutoCreate {
			if _, known, err := s.findTopic(ctx, cb.Topic); err != nil {
				return nil, false, err
			} else if !known {
				return nil, false, invalid("on_complete.topic", "unknown topic %s; create it first (PUT /v1/topics/%s)", cb.Topic, cb.Topic)
			}
		}
	}
	g.CreatedAt = TimeOf(s.cfg.Now().UnixMilli())
	g.SealedAt, g.CompletedAt, g.Counts, g.CompletionJob = time.Time{}, time.Time{}, nil, 0
	err = gs.CreateGroup(ctx, &g)
	if err == nil {
		return &g, true, nil
	}
	if !errors.Is(err, ErrConflict) {
		return nil, false, fmt.Errorf("create group: %w", err)
	}
	existing, gerr := gs.GetGroup(ctx, g.ID)
	if gerr != nil {
		return nil, false, fmt.Errorf("create group: %w", gerr)
	}
	if !sameCallback(existing.OnComplete, g.OnComplete) {
		return existing, false, fmt.Errorf("group %q exists with another on_complete: %w", GroupName(g.ID), ErrConflict)
	}
	if !existing.SealedAt.IsZero() {
		return existing, false, &groupSealedError{id: g.ID}
	}
	return existing, false, nil
}

func sameCallback(a, b *GroupCallback) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Topic == b.Topic && a.CallbackURL == b.CallbackURL && bytes.Equal(a.Payload, b.Payload)
}

// SealGroup closes group id to new members and checks at once whether it
// is complete. Sealing a sealed group changes nothing.
func (s *Scheduler) SealGroup(ctx context.Context, id string) (*Group, error) {
	gs, err := s.groupStore("id")
	if err != nil {
		return nil, err
	}
	g, err := gs.SealGroup(ctx, id, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	s.ended(id)
	return g, nil
}

// GroupView is a group and its members' counts now.
type GroupView struct {
	*Group
	// Now counts the members by status as they are now (Group.Counts is
	// what they were at completion).
	Now map[Status]int64
}

// Group returns group id with its members counted, or an error wrapping
// ErrNotFound.
func (s *Scheduler) Group(ctx context.Context, id string) (GroupView, error) {
	gs, err := s.groupStore("id")
	if err != nil {
		return GroupView{}, err
	}
	g, err := gs.GetGroup(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	counts, err := gs.GroupCounts(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	return GroupView{Group: g, Now: counts}, nil
}

// GetGroup returns group id as stored, its members not counted, or an
// error wrapping ErrNotFound.
func (s *Scheduler) GetGroup(ctx context.Context, id string) (*Group, error) {
	gs, err := s.groupStore("id")
	if err != nil {
		return nil, err
	}
	return gs.GetGroup(ctx, id)
}

// ScheduleGroup creates group g (or takes the open one of that id with
// the same callback, see CreateGroup), makes every request a member of
// it, commits them as ScheduleBatch does, and then, when seal is set,
// seals the group. A request naming another group is refused. When the
// batch is refused, the group stays as it was: created and open.
func (s *Scheduler) ScheduleGroup(ctx context.Context, g Group, seal bool, reqs []Request) (*Group, []Result, error) {
	var items []ItemError
	for i := range reqs {
		switch reqs[i].GroupID {
		case "", g.ID:
			reqs[i].GroupID = g.ID
		default:
			items = append(items, ItemError{Index: i, Err: invalid("group_id", "must be the batch's group %q, or left out", GroupName(g.ID))})
		}
	}
	if items != nil {
		return nil, nil, &BatchError{Items: items}
	}
	grp, _, err := s.CreateGroup(ctx, g)
	if err != nil {
		return nil, nil, groupField(err)
	}
	res, err := s.ScheduleBatch(ctx, reqs)
	if err != nil {
		return grp, res, err
	}
	if seal {
		if grp, err = s.SealGroup(ctx, g.ID); err != nil {
			return nil, res, fmt.Errorf("the jobs are committed, but sealing group %q failed: %w", GroupName(g.ID), err)
		}
	}
	return grp, res, nil
}

// groupField names the batch's group in a field error of its body.
func groupField(err error) error {
	if fe, ok := errors.AsType[*FieldError](err); ok {
		return &FieldError{Field: "group." + fe.Field, Message: fe.Message}
	}
	return err
}

// OnEnded registers fn to hear of each group whose member this scheduler
// ended (a cancel), or that it sealed: the GroupCompleter's cue.
func (s *Scheduler) OnEnded(fn func(group string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onEnded = append(s.onEnded, fn)
}

func (s *Scheduler) ended(group string) {
	if group == "" {
		return
	}
	s.mu.Lock()
	fns := s.onEnded
	s.mu.Unlock()
	for _, fn := range fns {
		fn(group)
	}
}

// joinable checks, before they are written, that the groups fresh jobs
// join exist and are open; a refused request gets its Err. known caches
// the groups read, by id.
func (s *Scheduler) joinable(ctx context.Context, r *Request, known map[string]*Group) (error, error) {
	if r.GroupID == "" {
		return nil, nil
	}
	g, ok := known[r.GroupID]
	if !ok {
		gs, err := s.groupStore("group_id")
		if err != nil {
			return err, nil
		}
		g, err = gs.GetGroup(ctx, r.GroupID)
		switch {
		case errors.Is(err, ErrNotFound):
			g = nil
		case err != nil:
			return nil, fmt.Errorf("group %q: %w", GroupName(r.GroupID), err)
		}
		known[r.GroupID] = g
	}
	switch {
	case g == nil:
		return UnknownGroup("group_id", r.GroupID), nil
	case !g.SealedAt.IsZero():
		return &groupSealedError{id: r.GroupID}, nil
	}
	return nil, nil
}

// sealedSince returns the groups of jobs, just committed, that are sealed
// now: their jobs joined too late and must be taken back.
func (s *Scheduler) sealedSince(ctx context.Context, jobs []*Job) (map[string]bool, error) {
	var sealed map[string]bool
	seen := make(map[string]bool)
	for _, j := range jobs {
		if j.GroupID == "" || seen[j.GroupID] {
			continue
		}
		seen[j.GroupID] = true
		gs, err := s.groupStore("group_id")
		if err != nil {
			return nil, err
		}
		g, err := gs.GetGroup(ctx, j.GroupID)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", GroupName(j.GroupID), err)
		}
		if !g.SealedAt.IsZero() {
			if sealed == nil {
				sealed = make(map[string]bool)
			}
			sealed[j.GroupID] = true
		}
	}
	return sealed, nil
}

// unwriteTimeout bounds taking back the rows of a group's late joiners:
// a task store statement, not an index write.
const unwriteTimeout = 10 * time.Second

// unwrite takes back jobs that joined a group sealed since they were
// checked. An error says they could not be, and will fire.
func (s *Scheduler) unwrite(ctx context.Context, jobs []*Job) error {
	uw, ok := s.store.(Unwriter)
	if !ok {
		return fmt.Errorf("%d jobs joined a sealed group and this task store cannot take them back; they will fire", len(jobs))
	}
	ids := make([]JobID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unwriteTimeout)
	defer cancel()
	if _, err := uw.Unwrite(ctx, ids); err != nil {
		return fmt.Errorf("%d jobs joined a sealed group and could not be taken back; they will fire: %w", len(jobs), err)
	}
	return nil
}

// DefaultGroupSweep is how often the GroupCompleter looks again at every
// sealed group not known complete: what catches a completion whose check
// was lost (a crash between a member's end and its check, or a member
// ended where nothing hears of it).
const DefaultGroupSweep = 10 * time.Second

// GroupCompleterConfig configures a GroupCompleter.
type GroupCompleterConfig struct {
	// Sweep is the interval of the sweep (default DefaultGroupSweep).
	Sweep time.Duration
	// BatchSize: groups read per page of the sweep (default 100).
	BatchSize int
	Now       func() time.Time
	Logger    *slog.Logger
}

// GroupCompleter declares groups complete, once, and schedules their
// completion jobs. It checks a group when it hears that one of its
// members ended (Notify: from the worker and the scheduler of this
// process) and, in a sweep, every sealed group not known complete.
//
// A check finds no live member (GroupStore.GroupLive) and then claims the
// completion with a conditional update (GroupStore.CompleteGroup), so of
// members ending at once on two processes only one declares it. The
// winner schedules the completion job under GroupKey, after the claim; a
// crash between the two leaves a completed group without a job, which the
// sweep finds and schedules again: the key makes it one job.
type GroupCompleter struct {
	store GroupStore
	jobs  JobScheduler
	cfg   GroupCompleterConfig

	mu    sync.Mutex
	dirty map[string]bool
	wake  chan struct{}
}

// NewGroupCompleter returns a GroupCompleter of store's groups that
// schedules completion jobs with jobs.
func NewGroupCompleter(store GroupStore, jobs JobScheduler, cfg GroupCompleterConfig) *GroupCompleter {
	if cfg.Sweep <= 0 {
		cfg.Sweep = DefaultGroupSweep
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	var obs Observer
	fillCommon(&cfg.Now, &cfg.Logger, &obs)
	return &GroupCompleter{store: store, jobs: jobs, cfg: cfg, dirty: make(map[string]bool), wake: make(chan struct{}, 1)}
}

// Notify asks for group id to be checked: one of its members ended, or it
// was sealed. It never blocks; checks of one group asked for while one
// runs are made once after it.
func (g *GroupCompleter) Notify(id string) {
	if id == "" {
		return
	}
	g.mu.Lock()
	g.dirty[id] = true
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

func (g *GroupCompleter) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := slices.Collect(maps.Keys(g.dirty))
	clear(g.dirty)
	return ids
}

// Run checks the groups it is told of, and sweeps, until ctx is done;
// then it returns nil.
func (g *GroupCompleter) Run(ctx context.Context) error {
	sweep := time.NewTicker(g.cfg.Sweep)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.wake:
			for _, id := range g.take() {
				if err := g.Check(ctx, id); err != nil && ctx.Err() == nil {
					g.warn("group check failed; the sweep will check it again", groupAttrs(id, "err", err)...)
				}
			}
		case <-sweep.C:
			if _, err := g.RunOnce(ctx); err != nil && ctx.Err() == nil {
				g.warn("group sweep failed", "err", err)
			}
		}
	}
}

func (g *GroupCompleter) warn(msg string, args ...any) { g.cfg.Logger.Warn(msg, args...) }

// groupAttrs are the log attributes of group id as toc stores it: the
// id its client knows it by (GroupName) and, unless it is of the default
// namespace, its namespace; then args.
func groupAttrs(id string, args ...any) []any {
	ns, name := SplitGroupID(id)
	attrs := []any{"group", name}
	if ns != "" {
		attrs = append(attrs, "namespace", ns)
	}
	return append(attrs, args...)
}

// RunOnce is one sweep: it checks every sealed group not known complete,
// and returns how many it completed or scheduled the job of.
func (g *GroupCompleter) RunOnce(ctx context.Context) (int, error) {
	n, after := 0, ""
	for {
		page, err := g.store.UnfinishedGroups(ctx, after, g.cfg.BatchSize)
		if err != nil {
			return n, fmt.Errorf("sweep groups: %w", err)
		}
		for _, gr := range page {
			done, err := g.check(ctx, gr)
			if err != nil {
				return n, err
			}
			if done {
				n++
			}
		}
		if len(page) < g.cfg.BatchSize {
			return n, nil
		}
		after = page[len(page)-1].ID
	}
}

// Check checks group id: when it is sealed and has no live member, it
// declares it complete (once, whoever else checks at the same time) and
// schedules its completion job.
func (g *GroupCompleter) Check(ctx context.Context, id string) error {
	gr, err := g.store.GetGroup(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = g.check(ctx, gr)
	return err
}

// check is Check of a group read; it reports whether it completed the
// group or scheduled its job.
func (g *GroupCompleter) check(ctx context.Context, gr *Group) (bool, error) {
	if gr.SealedAt.IsZero() {
		return false, nil
	}
	if gr.CompletedAt.IsZero() {
		live, err := g.store.GroupLive(ctx, gr.ID)
		if err != nil || live {
			return false, err
		}
		counts, err := g.store.GroupCounts(ctx, gr.ID)
		if err != nil {
			return false, err
		}
		won, err := g.store.CompleteGroup(ctx, gr.ID, counts, g.cfg.Now())
		if err != nil || !won {
			// Another check won: it schedules the job (or the sweep will).
			return false, err
		}
		if gr, err = g.store.GetGroup(ctx, gr.ID); err != nil {
			return true, err
		}
	}
	if gr.OnComplete == nil || gr.CompletionJob != 0 {
		return true, nil
	}
	return true, g.schedule(ctx, gr)
}

// schedule schedules gr's completion job, or finds the one its key
// names, and records it.
func (g *GroupCompleter) schedule(ctx context.Context, gr *Group) error {
	res, err := g.jobs.Schedule(ctx, CompletionRequest(gr))
	if err != nil {
		return fmt.Errorf("schedule the completion job of group %q: %w", GroupName(gr.ID), err)
	}
	if err := g.store.SetGroupJob(ctx, gr.ID, res.Job.ID); err != nil {
		return fmt.Errorf("record the completion job of group %q: %w", GroupName(gr.ID), err)
	}
	return nil
}

// CompletionRequest is the job of a completed group's callback: due now,
// keyed by GroupKey, with a payload made of the group's row alone
// (GroupPayload), so that scheduling it again makes the same request.
func CompletionRequest(gr *Group) Request {
	return Request{
		Topic:       gr.OnComplete.Topic,
		Key:         GroupKey(gr.ID),
		CallbackURL: gr.OnComplete.CallbackURL,
		Payload:     GroupPayload(gr),
	}
}

// GroupPayload is the payload of a completed group's callback:
//
//	{"group_id": "...", "counts": {"pending": 0, "firing": 0, "done": 990, ...},
//	 "total": 1000, "created_at": "...", "completed_at": "...", "payload": ...}
//
// group_id is the id the group's client knows (GroupName); counts holds
// every status of Statuses; payload is the group's own, when it has one.
func GroupPayload(gr *Group) []byte {
	const layout = "2006-01-02T15:04:05.000Z07:00"
	var total int64
	counts := make(map[string]int64, len(Statuses))
	for _, st := range Statuses {
		counts[st.String()] = gr.Counts[st]
		total += gr.Counts[st]
	}
	body := struct {
		GroupID     string           `json:"group_id"`
		Counts      map[string]int64 `json:"counts"`
		Total       int64            `json:"total"`
		CreatedAt   string           `json:"created_at"`
		CompletedAt string           `json:"completed_at"`
		Payload     json.RawMessage  `json:"payload,omitempty"`
	}{GroupName(gr.ID), counts, total, gr.CreatedAt.UTC().Format(layout), gr.CompletedAt.UTC().Format(layout), nil}
	if gr.OnComplete != nil && len(gr.OnComplete.Payload) > 0 {
		body.Payload = gr.OnComplete.Payload
	}
	b, _ := json.Marshal(body) // strings, numbers and valid JSON only
	return b
}
