package chaos

import (
	"bytes"
	"fmt"
	"html"
	"slices"
	"time"
)

// timelineSVG draws a run: acknowledged records and produce errors per
// second, the p99 ack latency per second, and one row per fault kind with
// each fault's window, on one time axis.
func timelineSVG(v *Verdict, rec *recorder) []byte {
	rec.mu.Lock()
	acks := slices.Clone(rec.acksPerSec)
	errs := slices.Clone(rec.errorsPerSec)
	lat := make([]time.Duration, len(rec.latencyPerS))
	for i, l := range rec.latencyPerS {
		lat[i] = quantile(l, 0.99)
	}
	rec.mu.Unlock()
	secs := max(len(acks), int(v.Wall/time.Second)+1, 1)
	var kinds []string
	for _, w := range v.Windows {
		if !slices.Contains(kinds, string(w.Kind)) {
			kinds = append(kinds, string(w.Kind))
		}
	}
	const (
		W, left, right = 1100.0, 110.0, 20.0
		plotH          = 120.0
		rowH           = 18.0
	)
	top1, top2 := 40.0, 40.0+plotH+40
	top3 := top2 + plotH + 40
	H := top3 + rowH*float64(max(1, len(kinds))) + 40
	x := func(sec float64) float64 { return left + (W-left-right)*sec/float64(secs) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	status := "PASS"
	if v.Total > 0 {
		status = fmt.Sprintf("FAIL (%d violations)", v.Total)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">shale-chaos %s seed %d: %s</text>`+"\n", left, html.EscapeString(v.Schedule), v.Seed, status)

	// fault windows behind the plots
	for _, w := range v.Windows {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f4c7c3" opacity="0.35"/>`+"\n",
			x(w.Start.Seconds()), top1, max(1, x(w.End.Seconds())-x(w.Start.Seconds())), top3-top1-40)
	}
	// throughput
	maxA := 1
	for i := range acks {
		maxA = max(maxA, acks[i], errs[min(i, len(errs)-1)])
	}
	axis(&b, top1, plotH, left, W-right, fmt.Sprintf("acked/s (max %d)", maxA))
	line(&b, acks, func(i int) (float64, float64) {
		return x(float64(i) + 0.5), top1 + plotH - plotH*float64(acks[i])/float64(maxA)
	}, "#1a73e8")
	line(&b, errs, func(i int) (float64, float64) {
		return x(float64(i) + 0.5), top1 + plotH - plotH*float64(errs[i])/float64(maxA)
	}, "#d93025")
	// latency
	var maxL time.Duration = time.Millisecond
	for _, l := range lat {
		maxL = max(maxL, l)
	}
	axis(&b, top2, plotH, left, W-right, fmt.Sprintf("ack p99 (max %v)", maxL.Round(time.Millisecond)))
	line(&b, lat, func(i int) (float64, float64) {
		return x(float64(i) + 0.5), top2 + plotH - plotH*float64(lat[i])/float64(maxL)
	}, "#188038")
	// fault rows
	for r, k := range kinds {
		y := top3 + rowH*float64(r)
		fmt.Fprintf(&b, `<text x="4" y="%.0f">%s</text>`+"\n", y+12, html.EscapeString(k))
		for _, w := range v.Windows {
			if string(w.Kind) != k {
				continue
			}
			color := "#e37400"
			if w.Err != "" {
				color = "#5f6368"
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s"><title>%s %s %v-%v recovery %v %s</title></rect>`+"\n",
				x(w.Start.Seconds()), y+2, max(2, x(w.End.Seconds())-x(w.Start.Seconds())), rowH-4, color,
				html.EscapeString(string(w.Kind)), html.EscapeString(w.Target), w.Start.Round(time.Millisecond), w.End.Round(time.Millisecond), w.Recovery.Round(time.Millisecond), html.EscapeString(w.Err))
		}
	}
	// time axis
	ty := H - 20
	step := max(1, secs/10)
	for s := 0; s <= secs; s += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%ds</text>`+"\n", x(float64(s)), ty, s)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func axis(b *bytes.Buffer, top, h, x0, x1 float64, label string) {
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`+"\n", x0, top+h, x1, top+h)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`+"\n", x0, top, x0, top+h)
	fmt.Fprintf(b, `<text x="4" y="%.0f">%s</text>`+"\n", top+12, html.EscapeString(label))
}

func line[T any](b *bytes.Buffer, vs []T, at func(i int) (float64, float64), color string) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.2" points="`, color)
	for i := range vs {
		px, py := at(i)
		fmt.Fprintf(b, "%.1f,%.1f ", px, py)
	}
	b.WriteString(`"/>` + "\n")
}
