package agentrun

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"kubeboot.dev/go/kubeboot"
)

// notifier is systemd's notification socket ($NOTIFY_SOCKET, sd_notify(3)): READY=1 at the
// agent's first ready event, STATUS= the latest line, STOPPING=1. Without it nothing is sent.
type notifier struct {
	addr  *net.UnixAddr
	ready bool
	errs  io.Writer
}

func newNotifier(on bool, errs io.Writer) *notifier {
	p := os.Getenv("NOTIFY_SOCKET")
	if !on || p == "" {
		return &notifier{}
	}
	// (Go's net package maps a leading '@' to the abstract namespace itself)
	return &notifier{addr: &net.UnixAddr{Name: p, Net: "unixgram"}, errs: errs}
}

func (n *notifier) send(msg string) {
	if n.addr == nil {
		return
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err == nil {
		_, err = c.Write([]byte(msg))
		c.Close()
	}
	if err != nil {
		fmt.Fprintln(n.errs, "kubeboot: NOTIFY_SOCKET:", err)
	}
}

func (n *notifier) event(line string, ready bool) {
	if ready && !n.ready {
		n.ready = true
		n.send("READY=1\nSTATUS=" + line)
		return
	}
	n.send("STATUS=" + line)
}

// serveMetrics answers GET /metrics with the agent's text rendered at that moment (the agent
// is safe to ask from this goroutine), and /healthz, until done.
func serveMetrics(l net.Listener, agent *kubeboot.Agent, done <-chan struct{}) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		b, err := agent.MetricsText(time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go func() { <-done; _ = srv.Close() }()
	_ = srv.Serve(l)
}

// textfile is the node_exporter textfile: rewritten after every event (each change of the
// metrics comes with one) and at least every MetricsTextfileRefresh (the TTLs age).
type textfile struct {
	path    string
	written time.Time
	errs    io.Writer
}

func (t *textfile) due(now time.Time) bool {
	return t.path != "" && now.Sub(t.written) >= kubeboot.MetricsTextfileRefresh
}

// write writes it atomically (a temporary file beside it, renamed), mode 0644: the collector
// reads whole files, often as another user. A failure is reported, never fatal.
func (t *textfile) write(agent *kubeboot.Agent, now time.Time) {
	if t.path == "" {
		return
	}
	t.written = now
	b, err := agent.MetricsText(now)
	if err == nil {
		tmp := filepath.Join(filepath.Dir(t.path), fmt.Sprintf(".%s.%d.tmp", filepath.Base(t.path), os.Getpid()))
		err = writeSynced(tmp, b)
		if err == nil {
			err = os.Rename(tmp, t.path)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		fmt.Fprintln(t.errs, "kubeboot: metrics textfile:", err)
	}
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printer prints event lines; on a terminal a progress update replaces the rows the line before
// took.
type printer struct {
	w    io.Writer
	fd   int // the terminal's, or -1
	rows int
}

func newPrinter(w io.Writer) *printer {
	p := &printer{w: w, fd: -1}
	if f, ok := w.(*os.File); ok {
		p.fd = int(f.Fd())
	}
	return p
}

func (p *printer) columns() int {
	if p.fd < 0 {
		return 0
	}
	var ws struct{ Row, Col, X, Y uint16 }
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(p.fd), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		return 0
	}
	return int(ws.Col)
}

func (p *printer) line(line string, update bool) {
	if p.w == nil {
		return
	}
	cols := p.columns()
	if cols > 0 && update && p.rows > 0 {
		fmt.Fprintf(p.w, "\x1b[%dF\x1b[J", p.rows)
	}
	fmt.Fprintln(p.w, line)
	p.rows = 0
	if cols > 0 {
		p.rows = (len(line) + cols - 1) / cols
	}
}
