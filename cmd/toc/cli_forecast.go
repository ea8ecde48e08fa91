// The client's forecast command: toc forecast TOPIC, a table of how many
// jobs fall due per step, each with a bar.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toc-project/toc/http/client"
)

// forecastBarWidth is the length of the longest bar of toc forecast.
const forecastBarWidth = 40

func forecastFlags(fs *flagSet) prepareCall {
	from := fs.timeVar("from", "start of the first bucket, RFC 3339 (default now)")
	to := fs.timeVar("to", "end of the last bucket, RFC 3339 (default --from + 24h)")
	step := fs.duration("step", 0, "length of a bucket, as 15m or 1h, at least 1s (default 1h)")
	return func(args []string) (call, error) {
		q := client.ForecastQuery{Topic: args[0], From: *from, To: *to, Step: *step}
		return func(ctx context.Context, c *client.Client) (any, error) { return c.Forecast(ctx, q) }, nil
	}
}

// forecastChart prints each bucket's start and count, and a bar as long
// as its count against the largest's (a count above 0 gets one mark at
// least), then, when counting stopped early, where.
func forecastChart(w io.Writer, f map[string]any) {
	buckets := objects(f["buckets"])
	var top int64
	for _, b := range buckets {
		top = max(top, count(b["count"]))
	}
	fmt.Fprintf(w, "start\tcount\t%s, by %v\n", f["topic"], f["step"])
	for _, b := range buckets {
		n := count(b["count"])
		bar := 0
		if top > 0 {
			bar = int((n*forecastBarWidth + top - 1) / top)
		}
		fmt.Fprintf(w, "%v\t%d\t%s\n", b["start"], n, strings.Repeat("#", bar))
	}
	if complete, _ := f["complete"].(bool); !complete {
		fmt.Fprintf(w, "\ncounted up to %v only: the buckets from there on are lower bounds\n", f["counted_to"])
	}
}

// count reads a count of the answer's JSON (a json.Number).
func count(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}
