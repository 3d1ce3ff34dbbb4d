package runner

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBodyMatchesReadAll checks readBody returns exactly what
// io.ReadAll over the same capped reader returns, bytes and error, for
// announced, chunked, over-the-cap and lying (short) bodies.
func TestReadBodyMatchesReadAll(t *testing.T) {
	const limit = 100
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			w.Write([]byte(strings.Repeat("a", 40)))
		case "/atcap":
			w.Write([]byte(strings.Repeat("b", limit)))
		case "/over":
			w.Write([]byte(strings.Repeat("c", 3*limit)))
		case "/chunked":
			for i := 0; i < 30; i++ {
				fmt.Fprintf(w, "chunk%02d;", i)
				w.(http.Flusher).Flush()
			}
		case "/empty":
		case "/short":
			// Announces 80 bytes, sends 10, hangs up.
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 80\r\n\r\n0123456789")
			buf.Flush()
			conn.Close()
		}
	}))
	defer srv.Close()
	get := func(path string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Close = true
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, path := range []string{"/exact", "/atcap", "/over", "/chunked", "/empty", "/short"} {
		a := get(path)
		got, gotErr := readBody(a, limit)
		a.Body.Close()
		b := get(path)
		want, wantErr := io.ReadAll(io.LimitReader(b.Body, limit+1))
		b.Body.Close()
		if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && !errors.Is(gotErr, wantErr) && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%s: readBody = %q, %v; io.ReadAll = %q, %v", path, got, gotErr, want, wantErr)
		}
		if path == "/short" && gotErr == nil {
			t.Errorf("%s: a body shorter than announced must be an error", path)
		}
	}
}

// TestReadBodyBufferStopsAtTheCap checks an answer past the cap is read
// into a buffer of the cap (limit+1 bytes, rounded to the allocator's
// size), never grown past it: announced (its length sizes the buffer, which
// used to be grown once more, a copy of the whole cap, to look for an end
// the capped reader cannot give: at max_body_bytes 64 MiB, 80 MiB kept per
// answer and a 144 MiB peak while copying) or not (a gzip bomb, a chunked
// flood, whose buffer grew by append's steps past the cap).
func TestReadBodyBufferStopsAtTheCap(t *testing.T) {
	const limit = 4 << 20
	body := strings.Repeat("x", 3*limit)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			for i := 0; i < len(body); i += 64 << 10 {
				w.Write([]byte(body[i : i+64<<10]))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write([]byte(body))
	}))
	defer srv.Close()
	for _, path := range []string{"/announced", "/chunked"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := readBody(resp, limit)
		resp.Body.Close()
		if err != nil || len(b) != limit+1 {
			t.Fatalf("%s: read %d bytes, %v; want %d", path, len(b), err, limit+1)
		}
		if c := cap(b); c > limit+1+64<<10 {
			t.Errorf("%s: buffer of %d bytes for a cap of %d: grown past it", path, c, limit+1)
		}
	}
}
