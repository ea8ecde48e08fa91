// Package metrics exports toc's Prometheus metrics.
//
// An Observer, made by New or NewWith, is both a timer.Observer (jobs scheduled,
// fired, retried and buried; firing lateness; claims; slot ownership)
// and a webhook.BreakerObserver (circuit breakers opened, hosts open).
// Its Handler serves the metrics, with the Go and process collectors, from
// a registry of its own, and WatchUsage adds per-topic gauges read at each
// scrape.
//
// # Cardinality
//
// Only the first Config.MaxTopics topics seen (default MaxTopicLabels)
// get series of their own; the rest share topic="_other", so that many
// topics cannot blow up the number of series, nor list every topic's name
// to whoever reads the metrics. Every metric with a topic label follows
// it, the firing lateness histogram included.
package metrics
