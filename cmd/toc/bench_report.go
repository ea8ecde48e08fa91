package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one row of the report.
type result struct {
	Scenario string         `json:"scenario"`
	Name     string         `json:"name"`
	Count    int            `json:"count"`
	Errors   int            `json:"errors"`
	Seconds  float64        `json:"seconds"`
	Rate     float64        `json:"rate_per_s"`
	Latency  *dist          `json:"latency_ms,omitempty"`
	Lost     *int           `json:"lost,omitempty"`
	Dups     *int           `json:"duplicates,omitempty"`
	Early    *int           `json:"early,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// dist is a latency distribution in milliseconds.
type dist struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	N    int     `json:"n"`
}

func distOf(d []time.Duration) *dist {
	if len(d) == 0 {
		return nil
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := min(len(d)-1, int(math.Ceil(p*float64(len(d))))-1)
		return ms(d[max(0, i)])
	}
	return &dist{P50: at(.5), P90: at(.9), P99: at(.99), P999: at(.999), Max: ms(d[len(d)-1]), N: len(d)}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func intp(n int) *int { return &n }

func printResults(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcount\trate/s\tp50 ms\tp90\tp99\tp999\tmax\terrors\tlost\tdups\tearly\t")
	for _, r := range rs {
		l := r.Latency
		if l == nil {
			l = &dist{}
		}
		opt := func(p *int) string {
			if p == nil {
				return "-"
			}
			return strconv.Itoa(*p)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t\n",
			r.Name, r.Count, r.Rate, l.P50, l.P90, l.P99, l.P999, l.Max, r.Errors, opt(r.Lost), opt(r.Dups), opt(r.Early))
	}
	tw.Flush()
	for _, r := range rs {
		if len(r.Extra) > 0 {
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range r.Extra {
					if !yield(k) {
						return
					}
				}
			})
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%v", k, r.Extra[k]))
			}
			fmt.Fprintf(w, "  %s: %s\n", r.Name, strings.Join(parts, " "))
		}
	}
	fmt.Fprintln(w)
}
