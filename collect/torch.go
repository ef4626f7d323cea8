package collect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TorchOptions configure the torch backend.
type TorchOptions struct {
	// Python is the interpreter; empty finds one that imports torch.
	Python string
	// DeviceKind is cuda (default) or cpu: a CPU run measures the real
	// worker code on the host, labelled CPU, for CI and laptops.
	DeviceKind string
	// GPUs are the NVML indices to use, one worker each; empty means all.
	GPUs []int
	// LockClocks pins SM clocks at their maximum while measuring.
	LockClocks bool
	// ForceDevice accepts a --device label that does not match the GPU.
	ForceDevice bool
	// Threads caps torch's CPU threads in each worker (0: torch's default).
	Threads int
	// Kernels is what the operators run (the worker's --kernels): vllm
	// (vLLM's own kernels as the engine calls them), compiled (without
	// vLLM: torch.compile of each op as vLLM writes it), eager (plain
	// PyTorch) or auto ("": vllm when vLLM imports, else compiled).
	Kernels string
	// GraphTiming times KERNEL_ONLY shapes as CUDA-graph replays of the op
	// (as vLLM's graph modes run it) instead of the profiler's kernel sums.
	GraphTiming bool
}

// Kernel choices of the torch worker (TorchOptions.Kernels).
const (
	KernelsAuto     = "auto"
	KernelsVLLM     = "vllm"
	KernelsCompiled = "compiled"
	KernelsEager    = "eager"
)

// Device kinds of the torch backend.
const (
	KindCUDA = "cuda"
	KindCPU  = "cpu"
)

// helloTimeout bounds a worker's start: importing torch (and CUDA) can
// take a while on a cold disk.
const helloTimeout = 3 * time.Minute

// torchBackend drives one worker process (collect/worker/ftk_worker.py)
// over line-delimited JSON. A worker that dies, or does not answer before
// the request's context ends, is killed (with its helper processes) and
// started again on the next request.
type torchBackend struct {
	python, script, device string
	threads                int
	kernels                string // --kernels of the worker; "" is its default (auto)
	env                    []string
	log                    io.Writer
	name                   string // for messages: "worker 0"
	p                      *workerProc
	hello                  map[string]any
}

// workerProc is one running worker.
type workerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // protocol lines; closed when stdout ends
	stderr *tailWriter
	waited chan struct{}
	err    error // exit status, set before waited closes
}

func newTorchBackend(python, device string, threads int, env []string, log io.Writer, name string) (*torchBackend, error) {
	script, err := workerPath()
	if err != nil {
		return nil, err
	}
	return &torchBackend{python: python, script: script, device: device, threads: threads, env: env, log: log, name: name}, nil
}

// start launches the worker and reads its hello.
func (b *torchBackend) start(ctx context.Context) error {
	args := []string{"-u", b.script, "--device", b.device}
	if b.threads > 0 {
		args = append(args, "--threads", strconv.Itoa(b.threads))
	}
	if b.kernels != "" {
		args = append(args, "--kernels", b.kernels)
	}
	cmd := exec.Command(b.python, args...)
	cmd.Env = append(os.Environ(), b.env...)
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p := &workerProc{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), stderr: &tailWriter{log: b.log, prefix: b.name + ": "}, waited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: starting %s: %w", b.name, b.python, err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && line[0] == '{' {
				p.lines <- line
			}
			if err != nil {
				break
			}
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.waited)
	}()
	b.p = p
	hctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	line, err := b.read(hctx)
	if err != nil {
		return fmt.Errorf("%s did not start: %w", b.name, err)
	}
	var hello map[string]any
	if err := json.Unmarshal(line, &hello); err != nil || hello["hello"] != "ftk-worker" {
		b.kill()
		return fmt.Errorf("%s: bad hello line %q", b.name, strings.TrimSpace(string(line)))
	}
	if ok, present := hello["ok"]; present && ok == false {
		b.kill()
		return fmt.Errorf("%s could not start: %v", b.name, hello["error"])
	}
	b.hello = hello
	return nil
}

// read returns the next protocol line, or an error when the worker exits
// or ctx ends (the worker is then killed).
func (b *torchBackend) read(ctx context.Context) ([]byte, error) {
	p := b.p
	select {
	case line, ok := <-p.lines:
		if ok {
			return line, nil
		}
		<-p.waited
		b.p = nil
		return nil, fmt.Errorf("the worker exited (%v); its last output: %s", p.err, p.stderr.tail())
	case <-ctx.Done():
		b.kill()
		return nil, ctx.Err()
	}
}

// Measure sends one request and waits for its answer.
func (b *torchBackend) Measure(ctx context.Context, req *Request) (*Response, error) {
	if b.p == nil {
		if err := b.start(ctx); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := b.p.stdin.Write(append(data, '\n')); err != nil {
		b.kill()
		return nil, fmt.Errorf("%s: writing a request: %w", b.name, err)
	}
	line, err := b.read(ctx)
	if err != nil {
		return nil, err
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		b.kill()
		return nil, fmt.Errorf("%s: bad answer %q: %w", b.name, strings.TrimSpace(string(line)), err)
	}
	if resp.ID != req.ID {
		b.kill()
		return nil, fmt.Errorf("%s answered request %q with %q", b.name, req.ID, resp.ID)
	}
	return &resp, nil
}

// kill ends the worker and every process it started (its process group).
func (b *torchBackend) kill() {
	if b.p == nil {
		return
	}
	killGroup(b.p.cmd)
	for range b.p.lines { // unblock the reader so it can reap the process
	}
	<-b.p.waited
	b.p = nil
}

// Close asks the worker to exit and waits briefly before killing it.
func (b *torchBackend) Close() error {
	if b.p == nil {
		return nil
	}
	b.p.stdin.Write([]byte(`{"op":"exit"}` + "\n"))
	b.p.stdin.Close()
	select {
	case <-b.p.waited:
		b.p = nil
	case <-time.After(20 * time.Second):
		b.kill()
	}
	return nil
}

// tailWriter keeps the end of a worker's stderr for error messages and
// passes its "ftk-worker:" notes on to the log.
type tailWriter struct {
	mu     sync.Mutex
	buf    []byte
	line   []byte
	log    io.Writer
	prefix string
}

const tailBytes = 2048

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	t.line = append(t.line, p...)
	for {
		i := strings.IndexByte(string(t.line), '\n')
		if i < 0 {
			break
		}
		if l := string(t.line[:i]); strings.HasPrefix(l, "ftk-worker: ") && t.log != nil {
			fmt.Fprintln(t.log, t.prefix+strings.TrimPrefix(l, "ftk-worker: "))
		}
		t.line = t.line[i+1:]
	}
	return len(p), nil
}

func (t *tailWriter) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(nothing)"
	}
	return s
}
