package timer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run claims and fires jobs until ctx is done, then stops claiming, lets
// the handler calls in flight finish within the grace period, records
// their outcomes, and returns. A lease it did not finish comes back to
// another worker when it expires. When the store keeps attempt history,
// Run also writes the attempts in batches and prunes the old ones.
func (w *Worker) Run(ctx context.Context) error {
	// Handler calls outlive ctx by the grace period; outcomes are recorded
	// even after that.
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	recordCtx := context.WithoutCancel(ctx)

	var loaders, executors, completer, catalog, history, pruner sync.WaitGroup
	for range loaderCount {
		loaders.Go(func() { w.load.run(handlerCtx, w.loadCh) })
	}
	for range w.cfg.Concurrency {
		executors.Go(func() { w.exec.run(handlerCtx, recordCtx, w.execCh) })
	}
	completer.Go(func() { w.complete.run(recordCtx, w.finishCh) })
	if w.ownCatalog {
		catalog.Go(func() { _ = w.catalog.Run(ctx) })
	}
	if w.history != nil {
		history.Go(func() { w.history.run(recordCtx) })
		pruner.Go(func() { w.history.pruneLoop(ctx) })
	}
	var peeker sync.WaitGroup
	if w.claim.cfg.reader != nil {
		peeker.Go(func() { w.peeker(ctx) })
	}

	err := w.loop(ctx)
	catalog.Wait()
	pruner.Wait()
	peeker.Wait()

	grace := time.AfterFunc(w.cfg.Grace, cancelHandlers)
	defer grace.Stop()
	close(w.loadCh)
	loaders.Wait()
	w.holds.Wait()
	close(w.execCh)
	executors.Wait()
	w.exec.pulled.Wait()
	close(w.finishCh)
	completer.Wait()
	// The completer hands the history the successes whose done mark
	// failed: it closes after the completer.
	if w.history != nil {
		w.history.close()
	}
	history.Wait()
	return err
}

// loop waits for something to do and runs a pass of the claimer. It
// alone touches the claimer's and the limiter's queues.
func (w *Worker) loop(ctx context.Context) error {
	owned := w.ownedChanged(ctx)
	topics := w.catalog.Changed()
	var demand <-chan struct{} // nil: never
	if w.cfg.Demand != nil {
		demand = w.cfg.Demand.Changed()
	}
	w.applyCatalog(ctx)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	rescan := time.NewTicker(w.cfg.Rescan)
	defer rescan.Stop()
	sample := time.NewTicker(time.Second)
	defer sample.Stop()
	sampled := w.cfg.Now()
	for {
		if ctx.Err() != nil {
			return nil
		}
		w.applyWakes()
		busy := w.askHeads()
		leases, buried, blocked := w.claim.runOnce(ctx)
		if len(leases) > 0 {
			w.loadCh <- claimed{leases: leases, at: w.claim.passAt} // never blocks: its buffer holds as many passes as there are lease tokens
		}
		for _, l := range buried {
			w.finishCh <- outcome{kind: outDeadRow, lease: l}
		}
		var wait <-chan time.Time
		now := w.cfg.Now()
		next := w.claim.next()
		if len(w.rescan) > 0 && (next.IsZero() || w.rescanAt.Before(next)) {
			next = w.rescanAt
		}
		switch {
		case busy:
			next = now // more slots to learn: go round at once
		case blocked:
			next = time.Time{} // nothing to do until a lease is freed
		}
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			wait = timer.C
		}
		var freed <-chan struct{}
		if blocked || len(w.lim.parked) > 0 {
			freed = w.lim.freed
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wait:
		case <-freed:
		case <-demand:
			w.lim.unpark()
		case <-w.woken:
		case <-owned:
			owned = w.ownedChanged(ctx)
		case <-topics:
			topics = w.catalog.Changed()
			w.applyCatalog(ctx)
		case <-rescan.C:
			w.startRescan()
		case res := <-w.heads:
			w.gotHeads(res)
		case <-sample.C:
			now := w.cfg.Now()
			w.lim.sampleRates(now.Sub(sampled))
			sampled = now
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// applyWakes hands the wake-ups and acks heard since the last pass to the
// claimer; a resync queues every owned slot to be learnt afresh.
func (w *Worker) applyWakes() {
	w.wakeMu.Lock()
	var (
		wakes map[Slot]time.Time
		acked map[Slot]ackedSlot
	)
	if len(w.wakes) > 0 {
		wakes, w.wakes = w.wakes, make(map[Slot]time.Time)
	}
	if len(w.acked) > 0 {
		acked, w.acked = w.acked, make(map[Slot]ackedSlot)
	}
	resync := w.resync
	w.resync = false
	w.wakeMu.Unlock()
	if resync {
		w.unknown = append(w.unknown, w.own.ranges()...)
	}
	now := w.cfg.Now()
	for s, at := range wakes {
		w.claim.wake(s, at, now)
	}
	for s, a := range acked {
		w.claim.acked(s, a.next, a.at, now)
	}
}

// headsAsk is a chunk of slots whose heads the peeker is to read, and
// headsAnswer what it read.
type headsAnswer struct {
	slots  []Slot
	heads  []SlotHeads
	err    error
	rescan bool
}

// peeker reads the heads of the chunks the loop asks for, off the loop, so
// that a rescan of thousands of slots never holds up a claim.
func (w *Worker) peeker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ask := <-w.headsAsk:
			ask.heads, ask.err = w.claim.cfg.reader.Heads(ctx, ask.slots)
			select {
			case w.heads <- ask:
			case <-ctx.Done():
				return
			}
		}
	}
}

// askHeads hands the peeker the next chunk of slots to learn, or of the
// rescan when its time has come, unless a chunk is being read. Without a
// HeadReader it marks the slots to learn due at once. It reports whether
// more slots wait to be learnt.
func (w *Worker) askHeads() bool {
	if w.claim.cfg.reader == nil {
		batch, rest := takeSlots(w.unknown, peekChunk)
		w.unknown = rest
		w.claim.markDue(batch)
		if len(w.rescan) > 0 && !w.cfg.Now().Before(w.rescanAt) {
			batch, w.rescan = takeSlots(w.rescan, peekChunk)
			w.claim.markDue(batch)
			w.rescanAt = w.rescanAt.Add(w.rescanStep)
		}
		return len(w.unknown) > 0
	}
	if w.asked {
		return false
	}
	ask := headsAnswer{}
	switch {
	case len(w.unknown) > 0:
		ask.slots, w.unknown = takeSlots(w.unknown, peekChunk)
	case len(w.rescan) > 0 && !w.cfg.Now().Before(w.rescanAt):
		ask.slots, w.rescan = takeSlots(w.rescan, peekChunk)
		ask.rescan = true
		w.rescanAt = w.rescanAt.Add(w.rescanStep)
	default:
		return false
	}
	w.asked = true
	w.headsAsk <- ask // never blocks: the peeker holds at most this one
	return false
}

// gotHeads places the slots of a chunk the peeker read; a chunk it could
// not read goes back to be read again shortly.
func (w *Worker) gotHeads(a headsAnswer) {
	w.asked = false
	if a.err != nil {
		w.log.Warn("read slot heads failed; trying again shortly", "dep", "redis", "slots", len(a.slots), "err", a.err)
		back := []slotRange{}
		for _, s := range a.slots {
			back = append(back, slotRange{topic: s.Topic, from: s.Index, to: s.Index + 1})
		}
		if a.rescan {
			w.rescan = append(back, w.rescan...)
		} else {
			w.unknown = append(back, w.unknown...)
		}
		w.rescanAt = w.cfg.Now().Add(errorBackoff)
		return
	}
	inherit := w.inheriting && !a.rescan
	w.inherited += w.claim.applyHeads(a.slots, a.heads, inherit)
	if inherit && len(w.unknown) == 0 {
		w.inheriting = false
		if w.inherited > 0 {
			w.log.Info("taking back the leases a previous run of this member held when it died", "slots", w.inherited)
		}
	}
}

// startRescan queues every owned slot to be read again, in chunks spread
// over the rescan period, unless the last rescan is still running.
func (w *Worker) startRescan() {
	if len(w.rescan) > 0 {
		return
	}
	w.rescan = w.own.ranges()
	chunks := max(1, (w.own.size()+peekChunk-1)/peekChunk)
	w.rescanStep = w.cfg.Rescan / time.Duration(chunks)
	w.rescanAt = w.cfg.Now()
}

// ownedEvery is how often at most the worker asks the assignment what it
// owns. Each ask walks every topic; a client creating topics on first use
// changes the list thousands of times a second, and answering each change
// at once would leave the loop no time to claim. A change after a quiet
// spell is applied at once.
const ownedEvery = 250 * time.Millisecond

// ownedChanged refreshes what the worker owns (refreshOwned), or, within
// ownedEvery of the last refresh, returns a channel closed when that
// time is up, for the loop to call it again then.
func (w *Worker) ownedChanged(ctx context.Context) <-chan struct{} {
	now := time.Now() // the real clock: a test's fake one may never reach the next time
	if next := w.ownedAt.Add(ownedEvery); now.Before(next) {
		later := make(chan struct{})
		time.AfterFunc(next.Sub(now), func() { close(later) })
		return later
	}
	w.ownedAt = now
	return w.refreshOwned(ctx)
}

// refreshOwned asks the assignment what the worker owns, queues the
// slots it gained to be learnt and drops those it lost at once. On error
// it keeps what it has and retries in a second.
func (w *Worker) refreshOwned(ctx context.Context) <-chan struct{} {
	var (
		added   []slotRange
		changed <-chan struct{}
		err     error
	)
	if ta, ok := w.owner.(TopicAssignment); ok {
		var topics []Topic
		if topics, changed, err = ta.OwnedTopics(ctx); err == nil {
			var gone []string
			added, gone = w.own.setTopics(topics)
			w.claim.dropTopics(gone)
		}
	} else {
		var slots []Slot
		if slots, changed, err = w.owner.Owned(ctx); err == nil {
			var lost []Slot
			added, lost = w.own.setSlots(slots)
			for _, s := range lost {
				w.claim.drop(s)
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("slot assignment failed; keeping the current slots", "dep", "assignment", "err", err)
		}
		retry := make(chan struct{})
		time.AfterFunc(time.Second, func() { close(retry) })
		return retry
	}
	w.unknown = append(w.unknown, added...)
	if h, ok := w.owner.(Handover); ok {
		if orphans := h.Orphans(); len(orphans) > 0 {
			now := w.cfg.Now()
			for _, s := range orphans {
				w.claim.reclaim(s, now)
			}
			w.log.Info("taking back the leases of a dead member's slots", "slots", len(orphans))
		}
	}
	w.cfg.Observer.Assigned(w.own.size())
	// The topics' rates and in-flight caps are split by the share of
	// their slots owned here: re-split them.
	w.lim.each(func(tp *topicState) {
		if tp.known {
			w.lim.configure(tp, w.own.share(tp.topic))
		}
	})
	return changed
}

// applyCatalog applies the limits of the topics changed in the catalog
// since the last call to the topics the limiter knows. It looks at the
// changed topics only: a flood of topic creations changes the catalog
// thousands of times a second, and a walk of every topic the limiter
// knows at each change would leave the loop no time to claim.
func (w *Worker) applyCatalog(ctx context.Context) {
	names, next, all := w.catalog.Changes(w.catalogAt)
	w.catalogAt = next
	apply := func(tp *topicState) {
		t, ok := w.catalog.Get(tp.name)
		if !ok || (tp.known && sameTopic(tp.topic, t)) {
			return
		}
		tp.topic, tp.known = t, true
		w.lim.configure(tp, w.own.share(t))
	}
	if all {
		w.lim.each(apply)
		return
	}
	for _, name := range names {
		if tp := w.lim.lookup(name); tp != nil {
			apply(tp)
		}
	}
}

// learnTopic configures a topic seen for the first time from the catalog
// (reading the store if the catalog does not have it yet), so that a
// flood of a new topic is limited from its first claim. Without it, the
// topic runs with the worker's defaults until the catalog has it.
func (w *Worker) learnTopic(ctx context.Context, tp *topicState) {
	tp.known = true
	t, err := w.catalog.Lookup(ctx, tp.name)
	if err != nil && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		w.log.Warn("read topic limits failed; using the defaults until the next refresh", "dep", "task_store", "topic", tp.name, "err", err)
	}
	if err == nil {
		tp.topic = t
	}
	w.lim.configure(tp, w.own.share(tp.topic))
}
