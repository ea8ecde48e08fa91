package slots

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

func TestClusterConfigValidate(t *testing.T) {
	topics := func(context.Context) ([]timer.Topic, error) { return nil, nil }
	valid := ClusterConfig{Servers: []string{"127.0.0.1:2181"}, Topics: topics}
	if err := valid.Validate(); err != nil {
		t.Fatalf("Validate = %v, want nil", err)
	}
	tests := []struct {
		field string
		edit  func(*ClusterConfig)
	}{
		{"Servers", func(c *ClusterConfig) { c.Servers = nil }},
		{"Servers", func(c *ClusterConfig) { c.Servers = []string{"a:1", ""} }},
		{"Root", func(c *ClusterConfig) { c.Root = "toc" }},
		{"Root", func(c *ClusterConfig) { c.Root = "/" }},
		{"Root", func(c *ClusterConfig) { c.Root = "/toc/" }},
		{"Root", func(c *ClusterConfig) { c.Root = "/a//b" }},
		{"SessionTimeout", func(c *ClusterConfig) { c.SessionTimeout = -time.Second }},
		{"ID", func(c *ClusterConfig) { c.ID = string(make([]byte, 129)) }},
		{"ID", func(c *ClusterConfig) { c.ID = "\xff" }},
		{"Capacity", func(c *ClusterConfig) { c.Capacity = -1 }},
		{"Load", func(c *ClusterConfig) { c.Load = 0.9 }},
		{"Topics", func(c *ClusterConfig) { c.Topics = nil }},
		{"TopicPoll", func(c *ClusterConfig) { c.TopicPoll = -1 }},
	}
	for _, tt := range tests {
		cfg := valid
		tt.edit(&cfg)
		err := cfg.Validate()
		fe, ok := errors.AsType[*timer.FieldError](err)
		if !ok || fe.Field != tt.field {
			t.Errorf("Validate = %v, want a FieldError on %s", err, tt.field)
		}
		if _, err := NewCluster(cfg); !errors.Is(err, timer.ErrInvalid) || !strings.HasPrefix(err.Error(), "cluster config: "+tt.field+": ") {
			t.Errorf("NewCluster = %v, want ErrInvalid as \"cluster config: %s: ...\"", err, tt.field)
		}
	}
	c, err := NewCluster(valid)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID() == "" || c.cfg.Root != DefaultRoot || c.cfg.Load != DefaultLoad || c.cfg.SessionTimeout != DefaultSessionTimeout {
		t.Errorf("defaults not applied: %+v", c.cfg)
	}
	if st := c.Status(); st.Connected || st.Version != -1 || st.Self != c.ID() {
		t.Errorf("Status before Run = %+v", st)
	}
	if owned, _, err := c.Owned(t.Context()); len(owned) != 0 || err != nil {
		t.Errorf("Owned before Run = %v, %v", owned, err)
	}
}
