package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal (a TTY), so that progress bars
// are drawn only for people and never into pipes, files or tests.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progress draws a one-line bar with count, rate and ETA on a terminal,
// redrawn at most every interval. It is not safe for concurrent use: the
// verb's loop owns it. A nil *progress draws nothing.
type progress struct {
	w        io.Writer
	unit     string // "records" or "bytes"
	total    int64  // 0 when unknown: no percentage and no ETA
	start    time.Time
	lastDraw time.Time
	interval time.Duration
	now      func() time.Time
	drawn    bool
}

// newProgress returns a bar on w when w is a terminal, else nil.
func newProgress(w io.Writer, unit string, total int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	t := time.Now()
	return &progress{w: w, unit: unit, total: total, start: t, interval: 200 * time.Millisecond, now: time.Now}
}

// update redraws the bar for done units if the interval has passed.
func (p *progress) update(done int64) {
	if p == nil {
		return
	}
	t := p.now()
	if p.drawn && t.Sub(p.lastDraw) < p.interval {
		return
	}
	p.lastDraw, p.drawn = t, true
	fmt.Fprintf(p.w, "\r%s\x1b[K", renderProgress(done, p.total, p.unit, t.Sub(p.start)))
}

// finish draws the final state and ends the line.
func (p *progress) finish(done int64) {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K\n", renderProgress(done, p.total, p.unit, p.now().Sub(p.start)))
}

// renderProgress is the bar's text for done of total units after elapsed:
//
//	[=========>          ]  45%  4500/10000 records  1.2k records/s  ETA 4s
//
// With total 0 it shows only the count and the rate.
func renderProgress(done, total int64, unit string, elapsed time.Duration) string {
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	rateText := humanCount(rate, unit) + "/s"
	if total <= 0 {
		return fmt.Sprintf("%d %s  %s", done, unit, rateText)
	}
	frac := float64(done) / float64(total)
	frac = min(max(frac, 0), 1)
	const width = 20
	filled := int(frac * width)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(max(total-done, 0)) / rate * float64(time.Second))).Round(time.Second).String()
	}
	return fmt.Sprintf("[%s] %3d%%  %d/%d %s  %s  ETA %s", bar, int(frac*100), done, total, unit, rateText, eta)
}

// humanCount prints a rate with k/M/G suffixes (binary for bytes).
func humanCount(v float64, unit string) string {
	base, suffixes := 1000.0, []string{"", "k", "M", "G"}
	if unit == "bytes" {
		base, suffixes = 1024.0, []string{"", "Ki", "Mi", "Gi"}
	}
	i := 0
	for v >= base && i < len(suffixes)-1 {
		v /= base
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", v, unit)
	}
	return fmt.Sprintf("%.1f%s %s", v, suffixes[i], unit)
}
