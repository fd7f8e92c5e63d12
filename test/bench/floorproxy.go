package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The floor scenario measures, beside the server, the least this machine can take to do what the
// server must with every byte of an upload: read it from a socket, hash it with SHA-256, and
// write it on (to a socket, as to S3, or to a file, as the filesystem backend does). The minimal
// proxy below does only that, with reads of up to 1 MiB on one goroutine, in a process of its own
// (this program, started again with floorProxyEnv set) so that its CPU time is read as the
// server's is. Its cost is the floor the server's is weighed against in the same rounds.

// floorProxyEnv makes this program the minimal proxy: "s3" sends every connection on to S3 in one
// streamed PUT (to the presigned URL and length the connection's first line gives, as
// "<url> <bytes>"), "dir:<folder>" writes it to a new file there (fsync, then removed).
const floorProxyEnv = "SLIPWAY_BENCH_FLOOR_PROXY"

// floorProxyRead is the proxy's read size (the server's cap on one read of a body).
const floorProxyRead = 1 << 20

// serveFloorProxy listens on loopback, prints its address and proxies each connection until it
// ends, then answers with the SHA-256 of what it read.
func serveFloorProxy(target string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			sum, err := proxyOnce(c, target)
			if err != nil {
				fmt.Fprintln(os.Stderr, "floor proxy:", err)
				return
			}
			_, _ = c.Write(sum)
		}()
	}
}

func proxyOnce(c net.Conn, target string) ([]byte, error) {
	in := bufio.NewReaderSize(c, 4096) // the first line; larger reads go past its buffer
	var out io.Writer
	var finish func() error
	switch kind, where, _ := strings.Cut(target, ":"); kind {
	case "s3":
		line, err := in.ReadString('\n')
		if err != nil {
			return nil, err
		}
		var rawURL string
		var size int64
		if _, err := fmt.Sscan(line, &rawURL, &size); err != nil {
			return nil, fmt.Errorf("first line %q: %w", line, err)
		}
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, err
		}
		o, err := net.Dial("tcp", u.Host)
		if err != nil {
			return nil, err
		}
		defer o.Close()
		if _, err := fmt.Fprintf(o, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), u.Host, size); err != nil {
			return nil, err
		}
		out = o
		finish = func() error {
			resp, err := http.ReadResponse(bufio.NewReader(o), nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("PUT answered %s", resp.Status)
			}
			return nil
		}
	case "dir":
		f, err := os.CreateTemp(where, "floor-")
		if err != nil {
			return nil, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		out, finish = f, f.Sync
	default:
		return nil, fmt.Errorf("%s=%q: want s3 or dir:<folder>", floorProxyEnv, target)
	}
	h := sha256.New()
	buf := make([]byte, floorProxyRead)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, werr := out.Write(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// floorProxy is a running minimal proxy.
type floorProxy struct {
	cmd  *exec.Cmd
	addr string
	// presign, for "s3", gives the URL of a PUT of size bytes to a new key.
	presign func(ctx context.Context, size int64) (string, error)
}

// startFloorProxy starts the minimal proxy writing to S3 through presign (dir == "") or to
// files in dir.
func startFloorProxy(dir string, presign func(ctx context.Context, size int64) (string, error)) (*floorProxy, error) {
	fp := &floorProxy{presign: presign}
	target := "dir:" + dir
	if dir == "" {
		target = "s3"
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fp.cmd = exec.Command(self)
	fp.cmd.Env = append(os.Environ(), floorProxyEnv+"="+target)
	fp.cmd.Stderr = os.Stderr
	out, err := fp.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := fp.cmd.Start(); err != nil {
		return nil, err
	}
	line := make([]byte, 64)
	n, err := out.Read(line)
	if err != nil {
		fp.stop()
		return nil, fmt.Errorf("the floor proxy did not start: %w", err)
	}
	fp.addr = strings.TrimSpace(string(line[:n]))
	return fp, nil
}

func (fp *floorProxy) pid() int { return fp.cmd.Process.Pid }

func (fp *floorProxy) stop() {
	_ = fp.cmd.Process.Kill()
	_ = fp.cmd.Wait()
}

// send writes data through the proxy in 1 MiB writes and checks the SHA-256 it answers.
func (fp *floorProxy) send(ctx context.Context, data []byte) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", fp.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	if fp.presign != nil {
		u, err := fp.presign(ctx, int64(len(data)))
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c, "%s %d\n", u, len(data)); err != nil {
			return err
		}
	}
	for off := 0; off < len(data); off += floorProxyRead {
		if _, err := c.Write(data[off:min(off+floorProxyRead, len(data))]); err != nil {
			return err
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	sum, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if want := sha256.Sum256(data); !bytes.Equal(sum, want[:]) {
		return errors.New("the floor proxy answered a wrong SHA-256")
	}
	return nil
}
