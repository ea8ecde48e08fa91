package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 34, item 6, the restore drill: a dump of the task store taken
// with mariadb-dump --single-transaction while toc schedules 100 jobs a
// second, restored into a fresh database beside an empty Redis, with
// toc started on it after the one it was taken from died. Every job
// pending at the dump fires exactly once, those that came due while
// toc was down at once, none early; none of those that fired or were
// cancelled before the dump fires again.
func TestBackupRestoreDrill(t *testing.T) {
	maria := testenv.MariaDB(t)
	src, dst := maria.NewDatabase(t), maria.NewDatabase(t)
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	r := newReceiver(t, secret)
	hook := r.srv.URL + "/hook"
	serve := func(dsn, redisAddr string) *proc {
		return startToc(t, "tok", "serve", "--mysql-dsn", dsn, "--redis-addr", redisAddr,
			"--redis-prefix", fmt.Sprintf("rd%d:", time.Now().UnixNano()),
			"--api-token", "tok", "--webhook-secret", secret, "--allow-private-callbacks")
	}
	p := serve(src, testenv.NewRedis(t).Addr)

	// Before the dump: 200 jobs fire, 50 are cancelled.
	fired := scheduleMany(t, p, "drill", hook, 200, time.Now().Add(500*time.Millisecond), time.Second)
	var cancelled []string
	for range 50 {
		status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "drill", "delay_ms": 6000, "callback_url": hook})
		if status != http.StatusCreated {
			t.Fatalf("schedule: %d %v", status, body)
		}
		id := body["id"].(string)
		if status, body := p.call(t, "DELETE", "/v1/jobs/"+id, nil); status != http.StatusOK {
			t.Fatalf("cancel: %d %v", status, body)
		}
		cancelled = append(cancelled, id)
	}
	r.wait(t, r.expect(fired), 30*time.Second)

	// Pending at the dump: 300 due while toc is down, 300 due after the
	// restore, and the load's, each due 6 s after it was sent; nothing
	// comes due between the dump and the kill.
	base := time.Now()
	downDue := scheduleBatches(t, p, "drill", hook, 300, base.Add(6*time.Second), time.Second)
	laterDue := scheduleBatches(t, p, "drill", hook, 300, base.Add(14*time.Second), 2*time.Second)
	stop := make(chan struct{})
	var (
		load sync.WaitGroup
		mu   sync.Mutex
		sent []string
	)
	load.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "load", "delay_ms": 6000, "callback_url": hook})
			if status == http.StatusCreated {
				mu.Lock()
				sent = append(sent, body["id"].(string))
				mu.Unlock()
			}
		}
	})
	time.Sleep(500 * time.Millisecond)
	dump := filepath.Join(t.TempDir(), "toc.sql")
	out, err := os.Create(dump)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(maria.Addr, ":")
	cmd := exec.Command("mariadb-dump", "--no-defaults", "--user=root", "--host="+host, "--port="+port, "--protocol=TCP",
		"--single-transaction", dbName(src))
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	close(stop)
	load.Wait()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, stderr.String())
	}
	out.Close()
	p.kill(t) // the failure the dump is restored after
	killed := time.Now()
	if killed.After(base.Add(6 * time.Second)) {
		t.Fatalf("the dump and the kill took until %v: jobs came due before the kill", killed.Sub(base))
	}

	// Restore into a fresh database, with an empty Redis, once the first
	// 300 are past due.
	in, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	restore := exec.Command("mariadb", "--no-defaults", "--user=root", "--host="+host, "--port="+port, "--protocol=TCP", dbName(dst))
	restore.Stdin = in
	if b, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, b)
	}
	in.Close()
	pendingAtDump := strings.Fields(maria.Exec(t, "SELECT job_id FROM `"+dbName(dst)+"`.toc_jobs WHERE status = 0"))
	mu.Lock()
	t.Logf("the dump holds %d pending jobs: %d due while toc is down, %d after, %d of the load's %d", len(pendingAtDump), len(downDue), len(laterDue), len(pendingAtDump)-600, len(sent))
	mu.Unlock()
	time.Sleep(time.Until(base.Add(8 * time.Second)))
	started := time.Now()
	serve(dst, testenv.NewRedis(t).Addr)

	r.wait(t, r.expect(pendingAtDump), 60*time.Second)
	time.Sleep(time.Second) // a second copy would come now
	r.check(t)              // none early, every signature good
	for _, id := range append(slices.Clone(downDue), laterDue...) {
		if !slices.Contains(pendingAtDump, id) {
			t.Errorf("job %s, pending when the dump was taken, is not pending in it", id)
		}
	}
	for _, id := range pendingAtDump {
		if n := r.count(id); n != 1 {
			t.Errorf("job %s, pending at the dump, fired %d times after the restore", id, n)
		}
	}
	for _, id := range fired {
		if n := r.count(id); n != 1 {
			t.Errorf("job %s, done before the dump, fired %d times", id, n)
		}
	}
	for _, id := range cancelled {
		if n := r.count(id); n != 0 {
			t.Errorf("job %s, cancelled before the dump, fired %d times", id, n)
		}
	}
	r.mu.Lock()
	var worst time.Duration
	for _, id := range downDue {
		worst = max(worst, r.arrived[id][0].Sub(started))
	}
	r.mu.Unlock()
	if worst > 5*time.Second {
		t.Errorf("the jobs that came due while toc was down arrived up to %v after it started again, want at once", worst)
	}
	t.Logf("the jobs due while toc was down arrived within %v of its start", worst.Round(time.Millisecond))
}

// dbName is the database of a go-sql-driver/mysql DSN.
func dbName(dsn string) string {
	_, rest, _ := strings.Cut(dsn, ")/")
	name, _, _ := strings.Cut(rest, "?")
	return name
}
