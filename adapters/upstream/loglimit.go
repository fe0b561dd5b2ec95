package upstream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Relayed logs (an upstream's stderr lines and its notifications/message)
// are rate-limited per upstream: a chatty or hostile upstream once turned
// 100k notifications and 200k stderr lines into a 139 MB log. Up to
// logBurst lines pass at once, then logRate a second; the others are
// dropped and counted, and the count is logged (at most once every
// logReportEvery, and when the upstream closes), so nothing is lost
// silently.
const (
	logRate        = 50
	logBurst       = 200
	logReportEvery = 10 * time.Second
)

type logLimiter struct {
	log *slog.Logger
	lim *rate.Limiter

	mu         sync.Mutex
	dropped    int64 // since the last report
	total      int64
	lastReport time.Time
	timer      *time.Timer // reports drops that no later line reports
}

func newLogLimiter(log *slog.Logger) *logLimiter {
	return &logLimiter{log: log, lim: rate.NewLimiter(logRate, logBurst)}
}

// Log logs a relayed line, or counts it when over the rate.
func (l *logLimiter) Log(level slog.Level, msg string, attrs ...any) {
	if l == nil {
		return
	}
	if !l.lim.Allow() {
		l.mu.Lock()
		l.dropped++
		l.total++
		l.mu.Unlock()
		l.report(false)
		l.reportLater()
		return
	}
	l.report(false)
	l.log.Log(context.Background(), level, msg, attrs...)
}

// report logs how many lines were dropped since the last report: when
// force is set, or when logReportEvery has passed.
func (l *logLimiter) report(force bool) {
	l.mu.Lock()
	now := time.Now()
	if l.dropped == 0 || !force && now.Sub(l.lastReport) < logReportEvery {
		l.mu.Unlock()
		return
	}
	n, total := l.dropped, l.total
	l.dropped, l.lastReport = 0, now
	l.mu.Unlock()
	l.log.Warn("upstream log lines dropped (over 50 a second)", "dropped", n, "dropped_total", total)
}

// reportLater makes sure drops not yet reported are reported once
// logReportEvery has passed, even if no other line comes to report them
// (a flood that ends).
func (l *logLimiter) reportLater() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped == 0 || l.timer != nil {
		return
	}
	l.timer = time.AfterFunc(time.Until(l.lastReport.Add(logReportEvery)), func() {
		l.mu.Lock()
		l.timer = nil
		l.mu.Unlock()
		l.report(false)
		l.reportLater() // drops that came meanwhile, not yet due
	})
}

// Flush reports what was dropped and not yet reported.
func (l *logLimiter) Flush() {
	if l != nil {
		l.report(true)
	}
}
