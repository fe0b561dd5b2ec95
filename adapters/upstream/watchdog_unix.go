//go:build unix

package upstream

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// The watchdog ends every upstream's process group when the gateway dies,
// however it dies. Pdeathsig (Linux) reaches only the direct child; a
// grandchild (npx's node, a shell's background job) would keep running
// under PID 1 after a kill -9 of the gateway. So the gateway starts one
// small shell per process, reading a pipe: "+PGID" when an upstream's
// group starts, "-PGID" once it has been ended. When the pipe reaches EOF
// (the kernel closes it when the gateway exits, for any reason), the
// shell SIGKILLs every group still listed. It ignores the terminal's
// signals and has its own process group, so a Ctrl-C reaches the gateway
// (which stops its upstreams in order) and not the watchdog. A group is
// removed from the list before its ID could be reused: the gateway keeps
// the group's leader unreaped until the group has been killed.
const watchdogScript = `trap '' INT TERM HUP
pgs=' '
while IFS= read -r l; do
  case "$l" in
    +*) pgs="$pgs${l#+} " ;;
    -*) n=' '; for p in $pgs; do [ "$p" = "${l#-}" ] || n="$n$p "; done; pgs=$n ;;
  esac
done
for p in $pgs; do kill -9 "-$p" 2>/dev/null; done
`

type watchdog struct {
	once sync.Once
	mu   sync.Mutex // serializes writes; a line to a pipe never blocks for long
	w    *os.File
	log  *slog.Logger
}

var dog watchdog

// start starts the watchdog shell, once per process.
func (d *watchdog) start(log *slog.Logger) {
	d.once.Do(func() {
		d.log = log
		r, w, err := os.Pipe()
		if err != nil {
			log.Warn("upstream watchdog not started: grandchildren of upstreams may outlive a killed gateway", "err", err)
			return
		}
		cmd := exec.Command("/bin/sh", "-c", watchdogScript)
		cmd.Stdin = r
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			r.Close()
			w.Close()
			log.Warn("upstream watchdog not started: grandchildren of upstreams may outlive a killed gateway", "err", err)
			return
		}
		r.Close()
		go func() { _ = cmd.Wait() }() // reaped if it ever ends first
		d.w = w
	})
}

func (d *watchdog) send(line string) {
	d.mu.Lock()
	if d.w == nil {
		d.mu.Unlock()
		return
	}
	_, err := io.WriteString(d.w, line)
	if err != nil {
		d.w.Close()
		d.w = nil
	}
	d.mu.Unlock()
	if err != nil {
		d.log.Debug("upstream watchdog gone", "err", err)
	}
}

// watch lists the process group led by pgid.
func (d *watchdog) watch(pgid int, log *slog.Logger) {
	d.start(log)
	d.send(fmt.Sprintf("+%d\n", pgid))
}

// forget takes the group off the list once it has been ended.
func (d *watchdog) forget(pgid int) { d.send(fmt.Sprintf("-%d\n", pgid)) }
