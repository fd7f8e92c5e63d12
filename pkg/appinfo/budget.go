package appinfo

import (
	"context"
	"io"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Parse memory
//
// Each parser caps what it reads, but caps alone do not bound a replica: sixteen small packages
// each built to reach their parser's caps (a resources.arsc of 64 MiB of deflated zeros, four
// 4096×4096 logos) take a gigabyte together. A Budget is the one bound of a replica's parses
// together: every parse (a proxied upload, a session's completion, a snapshot computed again, the
// checksum verifier's read) first reserves what it may allocate, and waits, in order of arrival,
// until that much is free. A parse is never refused for being one too many; it is refused only
// when its own bound is more than the whole budget, which no later moment would change.
//
// What a parse reserves is its bound, computed before it allocates anything large:
//
//   - a zip package: the zip directory walked first, with memory independent of what it holds
//     (zipread.SurveyDirectory), gives what opening it costs and the most its entries can
//     inflate to, each within what its compressed bytes allow. The parse reserves what the open
//     costs, opens it and lets a family claim it; then it holds, in all, the open's cost plus
//     the smaller of the family's MaxParseBytes (what its caps allow) and the entries' inflated
//     bytes (times two, for what is built from them) plus its DecodeBytes (an icon's pixels,
//     which no entry size bounds). When that much is not free at once, it gives everything
//     back, waits for the whole, and opens the directory again: a parse waits only while it
//     holds nothing, so parses never wait on one another in a cycle;
//   - any other file: the family's MaxParseBytes, or the file's size plus its DecodeBytes when
//     the family reads nothing compressed (ReadsRaw) and the file is smaller.
//
// Every parser allocates from the real sizes of what it reads, within its caps (no buffer
// grows by doubling, no window is allocated at a size only a header declares), and decodes an
// image only after image.DecodeConfig has checked its pixels against a cap, so that the bound
// holds; TestParseWithinBound (parse_bound_test.go) measures each family's hostile packages
// against it.

// ParseOverhead is what every parse reserves beyond its package's bound: decompressors' state,
// the small reads of a claim, the Info and its strings.
const ParseOverhead = 1 << 20

// Budget is a replica's parse-memory budget, shared by every parse (see above). Its zero value is
// not usable; a nil *Budget does not bound (ParseWithin parses at once).
type Budget struct {
	total   int64
	sem     *semaphore.Weighted
	held    atomic.Int64
	waiting atomic.Int64
}

// NewBudget returns a budget of total bytes.
func NewBudget(total int64) *Budget {
	return &Budget{total: total, sem: semaphore.NewWeighted(total)}
}

// Total returns the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// Held returns the bytes reserved now; Waiting how many reservations are waiting.
func (b *Budget) Held() int64    { return b.held.Load() }
func (b *Budget) Waiting() int64 { return b.waiting.Load() }

// Reservation is bytes of a Budget held by one parse (or one read): Shrink gives part back,
// Release the rest. A nil *Reservation does nothing.
type Reservation struct {
	b *Budget
	n atomic.Int64
}

// Reserve waits until n bytes of the budget are free and holds them, or returns ctx's error. It
// refuses, at once and with an errs.Invalid error, n over the whole budget: what costs more than
// the replica may give every parse together can never be served by it. what names the work in
// that message ("the package's parse").
func (b *Budget) Reserve(ctx context.Context, n int64, what string) (*Reservation, error) {
	if b == nil {
		return nil, nil
	}
	n = max(n, 1)
	if n > b.total {
		return nil, errs.New(errs.Invalid, "%s needs up to %d MiB of memory, more than this server gives all parses together (%d MiB, SLIPWAY_PARSE_MEMORY): nothing was kept",
			what, (n+1<<20-1)>>20, b.total>>20)
	}
	if !b.sem.TryAcquire(n) {
		b.waiting.Add(1)
		err := b.sem.Acquire(ctx, n)
		b.waiting.Add(-1)
		if err != nil {
			return nil, err
		}
	}
	b.held.Add(n)
	r := &Reservation{b: b}
	r.n.Store(n)
	return r, nil
}

// Size returns the bytes held.
func (r *Reservation) Size() int64 {
	if r == nil {
		return 0
	}
	return r.n.Load()
}

// Shrink keeps at most n bytes, giving the rest back; it never grows a reservation (that would be
// a second wait while holding, which could deadlock two parses).
func (r *Reservation) Shrink(n int64) {
	if r == nil {
		return
	}
	n = max(n, 1)
	for {
		cur := r.n.Load()
		if n >= cur {
			return
		}
		if r.n.CompareAndSwap(cur, n) {
			r.b.held.Add(n - cur)
			r.b.sem.Release(cur - n)
			return
		}
	}
}

// TryGrow holds n bytes in all if that many more than now are free at once (and nobody is waiting
// before it), and reports whether it does; it never waits. A reservation of n or more is kept.
func (r *Reservation) TryGrow(n int64) bool {
	if r == nil {
		return true
	}
	cur := r.n.Load()
	if n <= cur {
		return true
	}
	if n > r.b.total || !r.b.sem.TryAcquire(n-cur) {
		return false
	}
	r.n.Add(n - cur)
	r.b.held.Add(n - cur)
	return true
}

// Release gives the whole reservation back; a second call does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	if n := r.n.Swap(0); n > 0 {
		r.b.held.Add(-n)
		r.b.sem.Release(n)
	}
}

// ParseWithin is Parse under the budget b: it reserves the package's bound (see above) plus extra
// bytes (what the caller's reader may cache for the parse), waits for it (in order of arrival,
// until ctx ends), parses, and gives it back. A nil b parses at once.
func ParseWithin(ctx context.Context, b *Budget, r io.ReaderAt, size, extra int64) (*Info, error) {
	if b == nil {
		return Parse(r, size)
	}
	if size <= 0 {
		return nil, errs.Invalidf("the file is empty")
	}
	if zipread.IsZip(r, size) {
		s, err := zipread.SurveyDirectory(r, size)
		if err != nil {
			return nil, err
		}
		base := ParseOverhead + extra + s.OpenCost()
		res, err := b.Reserve(ctx, base, "the package's parse")
		if err != nil {
			return nil, err
		}
		defer func() { res.Release() }()
		a, fam, parse, err := openClaim(r, size)
		if err != nil {
			return nil, err
		}
		need := base + claimedZipBound(a, s, fam)
		if !res.TryGrow(need) {
			// Not free now: wait for the whole bound holding nothing, the opened directory
			// left to the collector, then open it again (from the reader's cache, mostly).
			res.Release()
			a, parse = nil, nil
			if res, err = b.Reserve(ctx, need, "the package's parse"); err != nil {
				return nil, err
			}
			if a, _, parse, err = openClaim(r, size); err != nil {
				return nil, err
			}
		}
		info, err := parse(a)
		return withSizes(info, err, size)
	}
	fam, parse := claimFileFamily(r, size)
	if parse == nil {
		return nil, unrecognisedFile(r, size)
	}
	res, err := b.Reserve(ctx, ParseOverhead+extra+fileBound(fam, r, size), "the package's parse")
	if err != nil {
		return nil, err
	}
	defer res.Release()
	info, err := parse(r, size)
	return withSizes(info, err, size)
}

// Bound returns what a parse of the package in r reserves, ParseOverhead included: the figure
// ParseWithin waits for once a family claims the package (tests measure parses against it).
func Bound(r io.ReaderAt, size int64) (int64, error) {
	if zipread.IsZip(r, size) {
		s, err := zipread.SurveyDirectory(r, size)
		if err != nil {
			return 0, err
		}
		a, err := zipread.Open(r, size)
		if err != nil {
			return 0, err
		}
		fam, _ := claimZipFamily(a)
		return ParseOverhead + s.OpenCost() + claimedZipBound(a, s, fam), nil
	}
	fam, _ := claimFileFamily(r, size)
	return ParseOverhead + fileBound(fam, r, size), nil
}

// openClaim opens the zip in r and finds the family that claims it.
func openClaim(r io.ReaderAt, size int64) (*zipread.Archive, *Family, ZipParser, error) {
	a, err := zipread.Open(r, size)
	if err != nil {
		return nil, nil, nil, err
	}
	fam, parse := claimZipFamily(a)
	if parse == nil {
		return nil, nil, nil, unrecognisedZip(a)
	}
	return a, fam, parse, nil
}

// zipBound is the bound of a zip package's parse by fam beyond the directory, from the sizes of
// its entries.
func zipBound(s zipread.Survey, fam *Family) int64 {
	if fam == nil {
		return 0
	}
	from := 2*s.InflatedBytes + fam.DecodeBytes
	if fam.MaxParseBytes <= 0 {
		return from
	}
	return min(fam.MaxParseBytes, from)
}

// claimedZipBound is zipBound once fam claimed the archive a: its NestedBytes when its parse reads
// a zip inside a.
func claimedZipBound(a *zipread.Archive, s zipread.Survey, fam *Family) int64 {
	if fam != nil && fam.NestedBytes != nil {
		if n := fam.NestedBytes(a); n > 0 {
			return n
		}
	}
	if fam != nil && fam.ZipParseBytes != nil {
		if n := fam.ZipParseBytes(a); n > 0 {
			return min(n, zipBound(s, fam))
		}
	}
	return zipBound(s, fam)
}

// fileBound is the bound of a parse by fam of a file that is not a zip, of size bytes.
func fileBound(fam *Family, r io.ReaderAt, size int64) int64 {
	if fam == nil {
		return 0
	}
	if fam.FileParseBytes != nil {
		if n := fam.FileParseBytes(r, size); n > 0 {
			return min(n, fam.MaxParseBytes)
		}
	}
	if fam.ReadsRaw && 2*size+fam.DecodeBytes < fam.MaxParseBytes {
		return 2*size + fam.DecodeBytes
	}
	return fam.MaxParseBytes
}

func unrecognisedZip(a *zipread.Archive) error { return unrecognised(a.Describe(5)) }

func unrecognisedFile(r io.ReaderAt, size int64) error { return unrecognised(sniff(r, size)) }

// unrecognised says, in the words of whoever uploads (what each family takes, not its name),
// that a file is no build Slipway reads, and what it found instead.
func unrecognised(found string) error {
	return errs.Wrap(errs.Invalid, ErrUnrecognised, "this is not a build Slipway reads (%s): %s", strings.Join(takes(), "; "), found)
}
