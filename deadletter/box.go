package deadletter

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Config configures a Box.
type Config struct {
	// Prefix starts every key; slots.DefaultPrefix when empty. It must not
	// hold '{' or '}' (see slots.ValidPrefix), and should be the prefix
	// the timer index writes under (prepare.Config.Prefix).
	Prefix string
	// NamespacePrefixes are the key prefixes of the topics of other
	// namespaces, as prepare.Config's.
	NamespacePrefixes map[string]string
}

// Validate returns a *timer.FieldError naming the first invalid field.
func (c Config) Validate() error {
	return errors.Join(slots.CheckPrefix(c.Prefix), slots.CheckPrefixes(c.NamespacePrefixes))
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, slots.DefaultPrefix)
	return c
}

// Box is the Dead sets of a Redis deployment: where the scripts move a
// job whose attempts ran out, until the worker clears it (timer.Leaser's
// Forget) once its row says dead. They are not the record of the dead
// letters (the task store is: see Letters) and nothing lists them; a
// purge clears a member a failed Forget, or an older version, left.
type Box struct {
	client     redis.UniversalClient
	prefix     string
	namespaces map[string]string
}

// New returns the Box of the keys under cfg.Prefix, or an error wrapping
// cfg's *timer.FieldError.
func New(client redis.UniversalClient, cfg Config) (*Box, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("deadletter config: %w", err)
	}
	return &Box{client: client, prefix: cfg.withDefaults().Prefix, namespaces: cfg.NamespacePrefixes}, nil
}

func (b *Box) key(topic string, slot int) string {
	return slots.Keys(slots.PrefixOf(b.prefix, b.namespaces, topic), topic, slot).Dead
}

// Purge deletes dead job id, of any priority, from slot, reporting
// whether it was there.
func (b *Box) Purge(ctx context.Context, slot timer.Slot, id timer.JobID) (bool, error) {
	if !slots.ValidTopic(slot.Topic) || slot.Index < 0 || slot.Index >= slots.Max {
		return false, fmt.Errorf("purge dead letter %d: slot %q/%d: %w", id, slot.Topic, slot.Index, timer.ErrInvalid)
	}
	ms := lua.Members(uint64(id))
	n, err := b.client.ZRem(ctx, b.key(slot.Topic, slot.Index), ms[0], ms[1], ms[2]).Result()
	if err != nil {
		return false, fmt.Errorf("purge dead letter %d of slot %s: %w", id, slot, err)
	}
	return n > 0, nil
}
