package prepare_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/prepare"
)

func TestMarkAndLost(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	q, err := prepare.New(rdb, prepare.Config{Prefix: "m:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if lost, err := q.Lost(ctx); err != nil || !lost {
		t.Fatalf("before any mark: lost=%v err=%v, want lost", lost, err)
	}
	if err := q.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	if lost, err := q.Lost(ctx); err != nil || lost {
		t.Fatalf("after mark: lost=%v err=%v", lost, err)
	}
	mr.FlushAll()
	if lost, err := q.Lost(ctx); err != nil || !lost {
		t.Fatalf("after FLUSHALL: lost=%v err=%v, want lost", lost, err)
	}
	mr.Close()
	if _, err := q.Lost(ctx); err == nil {
		t.Fatal("no error with Redis gone")
	}
}
