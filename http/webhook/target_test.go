package webhook

import (
	"strconv"
	"testing"
)

func TestTargets(t *testing.T) {
	var ts targets
	a, err := ts.get("http://Receiver.example:8080/hooks/a%2Fb?x=1")
	if err != nil {
		t.Fatal(err)
	}
	want := target{host: "receiver.example:8080", addr: "Receiver.example:8080", uri: "/hooks/a%2Fb?x=1"}
	if a.host != want.host || a.addr != want.addr || a.uri != want.uri || a.u.Host != "Receiver.example:8080" {
		t.Errorf("target = %+v, want %+v", *a, want)
	}
	if again, _ := ts.get("http://Receiver.example:8080/hooks/a%2Fb?x=1"); again != a {
		t.Error("a URL called again was parsed again")
	}
	if d, _ := ts.get("http://localhost/hook"); d.addr != "localhost:80" || d.host != "localhost:80" || d.uri != "/hook" {
		t.Errorf("default port: %+v", *d)
	}
	if _, err := ts.get("http://bad host/"); err == nil {
		t.Error("an invalid URL has a target")
	}

	// URLs of one call each: the kept ones are let go, never more than
	// maxTargets of them.
	for i := range 2 * maxTargets {
		if _, err := ts.get("http://localhost/job?id=" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	kept := 0
	ts.m.Range(func(any, any) bool { kept++; return true })
	if kept > maxTargets || kept == 0 || int64(kept) != ts.n.Load() {
		t.Errorf("%d targets kept, counted %d, want 1..%d", kept, ts.n.Load(), maxTargets)
	}
	if _, ok := ts.m.Load("http://localhost/job?id=" + strconv.Itoa(2*maxTargets-1)); !ok {
		t.Error("the last URL called is not kept")
	}
}
