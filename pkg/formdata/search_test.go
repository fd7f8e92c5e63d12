package formdata

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// delimiters are the part delimiters of the clients' boundaries (curl, Go and OkHttp, Ruby's
// multipart-post as fastlane sends it), an LF-only one and the shortest.
var delimiters = []string{
	"\r\n--------------------------d74496d66958873e",
	"\r\n--3d6b6a416f9b5f9d3b8ed1b7a1b0c6e5b8f1e4c6d2a9b3e1f0c7d8a2b4e6",
	"\r\n--8b1c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e",
	"\r\n-------------RubyMultipartPost-4a4f8f6d0a1b2c3d4e5f6a7b8c9d0e1f",
	"\n--simple boundary",
	"\r\n--a",
}

func TestFinderIsBytesIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range delimiters {
		f := newFinder([]byte(d))
		for trial := range 3000 {
			n := rng.IntN(2000)
			s := make([]byte, n)
			for i := range s {
				s[i] = byte(rng.Uint32())
			}
			switch trial % 6 {
			case 1: // the delimiter somewhere, perhaps twice
				for range 1 + rng.IntN(2) {
					if n >= len(d) {
						copy(s[rng.IntN(n-len(d)+1):], d)
					}
				}
			case 2: // pieces of it: its pairs everywhere
				for i := 0; i+8 < n; i += 1 + rng.IntN(8) {
					j := rng.IntN(len(d) - 1)
					copy(s[i:], d[j:min(j+2+rng.IntN(6), len(d))])
				}
			case 3: // text of dashes and hex, with the delimiter cut short, then whole
				alphabet := "-0123456789abcdef\r\n"
				for i := range s {
					s[i] = alphabet[rng.IntN(len(alphabet))]
				}
				if n >= len(d) {
					copy(s[rng.IntN(n-len(d)+1):], d[:len(d)-1])
					copy(s[rng.IntN(n-len(d)+1):], d)
				}
			case 4: // at the very start or end
				if n >= len(d) {
					if rng.IntN(2) == 0 {
						copy(s, d)
					} else {
						copy(s[n-len(d):], d)
					}
				}
			}
			if got, want := f.index(s), bytes.Index(s, []byte(d)); got != want {
				t.Fatalf("delimiter %q, input %q: index %d, bytes.Index %d", d, s, got, want)
			}
		}
	}
}

func FuzzFinder(f *testing.F) {
	for _, d := range delimiters {
		f.Add([]byte(d), []byte(strings.Repeat("x", 200)+d+"y"))
		f.Add([]byte(d), []byte(strings.Repeat(d[:len(d)-1], 6)+d))
	}
	f.Fuzz(func(t *testing.T, pat, s []byte) {
		if len(pat) == 0 || len(pat) > 80 {
			return
		}
		if got, want := newFinder(pat).index(s), bytes.Index(s, pat); got != want {
			t.Fatalf("pattern %q, input %q: index %d, bytes.Index %d", pat, s, got, want)
		}
	})
}

// BenchmarkFinder searches 1 MiB reads of random bytes (a package) without a delimiter, as the
// upload path does for every read of a file part, with the finder and with bytes.Index.
func BenchmarkFinder(b *testing.B) {
	s := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range s {
		s[i] = byte(rng.Uint32())
	}
	for _, d := range delimiters[:4] {
		pat := []byte(d)
		f := newFinder(pat)
		b.Run("finder/"+d[4:12], func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if f.index(s) >= 0 {
					b.Fatal("found")
				}
			}
		})
		b.Run("bytes.Index/"+d[4:12], func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if bytes.Index(s, pat) >= 0 {
					b.Fatal("found")
				}
			}
		})
	}
}
