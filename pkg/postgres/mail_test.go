package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

func outgoing(n int) []distribution.OutgoingMail {
	out := make([]distribution.OutgoingMail, n)
	for i := range out {
		out[i] = distribution.OutgoingMail{ID: fmt.Sprintf("m%04d", i), Kind: distribution.MailSignIn, To: fmt.Sprintf("t%d@example.com", i),
			Subject: "Sign in", Text: "https://apps.example.com/t/link/secret", HTML: "<p>link</p>",
			Headers: map[string]string{"List-Unsubscribe": "<https://apps.example.com/u>"}}
	}
	return out
}

func state(t *testing.T, db *postgres.DB, id string) (st string, attempts int, text string) {
	t.Helper()
	if err := db.Pool.QueryRow(context.Background(), `SELECT state, attempts, text_body FROM mail_outbox WHERE id = $1`, id).Scan(&st, &attempts, &text); err != nil {
		t.Fatal(err)
	}
	return st, attempts, text
}

// TestMailOutbox: a mail is leased by one handle at a time, its outcome recorded only under its
// lease, retried when due, given back uncounted, leased again once its lease ran out (a replica
// died mid-send), counted, and pruned when finished long enough.
func TestMailOutbox(t *testing.T) {
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	a, b := open(), open()
	if err := a.EnqueueMail(ctx, outgoing(3)); err != nil {
		t.Fatal(err)
	}
	// The same ids again: nothing new (a retried use case sends each once).
	if err := b.EnqueueMail(ctx, outgoing(3)); err != nil {
		t.Fatal(err)
	}
	if c, err := a.MailCounts(ctx); err != nil || c != (distribution.MailCounts{Pending: 3}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	due, err := a.LeaseMail(ctx, 10, time.Hour)
	if err != nil || len(due) != 3 {
		t.Fatalf("leased %d %v", len(due), err)
	}
	if d := due[0]; d.ID != "m0000" || d.Attempt != 1 || d.To != "t0@example.com" || d.Headers["List-Unsubscribe"] != "<https://apps.example.com/u>" || d.HTML != "<p>link</p>" {
		t.Errorf("leased %+v", d)
	}
	if again, err := b.LeaseMail(ctx, 10, time.Hour); err != nil || len(again) != 0 {
		t.Fatalf("another handle leased %d leased mails (%v)", len(again), err)
	}

	// Sent: recorded, bodies cleared; a second record of the same attempt changes nothing.
	if ok, err := a.FinishMail(ctx, "m0000", 1, distribution.MailFinish{State: distribution.OutboxSent}); !ok || err != nil {
		t.Fatalf("sent: %v %v", ok, err)
	}
	if st, _, text := state(t, a, "m0000"); st != "sent" || text != "" {
		t.Errorf("sent mail: %s, body %q", st, text)
	}
	if ok, _ := a.FinishMail(ctx, "m0000", 1, distribution.MailFinish{State: distribution.OutboxPending, Next: time.Now()}); ok {
		t.Error("a sent mail was recorded again")
	}
	// Retried later: not due now.
	if ok, err := a.FinishMail(ctx, "m0001", 1, distribution.MailFinish{State: distribution.OutboxPending, Next: time.Now().Add(time.Hour), Error: "smtp mail from: 451 busy"}); !ok || err != nil {
		t.Fatalf("retry: %v %v", ok, err)
	}
	// Given back: due at once, its attempt uncounted.
	if err := a.ReleaseMail(ctx, "m0002", 1); err != nil {
		t.Fatal(err)
	}
	due, err = b.LeaseMail(ctx, 10, time.Hour)
	if err != nil || len(due) != 1 || due[0].ID != "m0002" || due[0].Attempt != 1 {
		t.Fatalf("after the release: %+v %v", due, err)
	}

	// The lease runs out (its replica died): the mail is due again, and the dead replica's late
	// record changes nothing.
	if _, err := b.Pool.Exec(ctx, `UPDATE mail_outbox SET lease_until = now() - interval '1 second' WHERE id = 'm0002'`); err != nil {
		t.Fatal(err)
	}
	due, err = a.LeaseMail(ctx, 10, time.Hour)
	if err != nil || len(due) != 1 || due[0].ID != "m0002" || due[0].Attempt != 2 {
		t.Fatalf("an expired lease: %+v %v", due, err)
	}
	if ok, _ := b.FinishMail(ctx, "m0002", 1, distribution.MailFinish{State: distribution.OutboxSent}); ok {
		t.Error("the first lease's record counted after its lease ran out")
	}
	if ok, err := a.FinishMail(ctx, "m0002", 2, distribution.MailFinish{State: distribution.OutboxFailed, Error: "smtp rcpt to: 550 no"}); !ok || err != nil {
		t.Fatalf("failed: %v %v", ok, err)
	}
	if c, err := a.MailCounts(ctx); err != nil || c != (distribution.MailCounts{Pending: 1, Failed: 1}) {
		t.Errorf("counts %+v %v", c, err)
	}
	if n, err := a.PruneMail(ctx, time.Now().Add(-time.Hour), 10); err != nil || n != 0 {
		t.Errorf("pruned %d recent mails (%v)", n, err)
	}
	if n, err := a.PruneMail(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 2 {
		t.Errorf("pruned %d finished mails, want 2 (%v)", n, err)
	}
	if c, _ := a.MailCounts(ctx); c != (distribution.MailCounts{Pending: 1}) {
		t.Errorf("after pruning: %+v", c)
	}
}

// TestMailLeasesAreExclusive: handles leasing at once never take one mail twice.
func TestMailLeasesAreExclusive(t *testing.T) {
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	const n = 300
	var handles []*postgres.DB
	for range 3 {
		db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		handles = append(handles, db)
	}
	if err := handles[0].EnqueueMail(ctx, outgoing(n)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for _, db := range handles {
		for range 2 {
			wg.Go(func() {
				for {
					due, err := db.LeaseMail(ctx, 7, time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if len(due) == 0 {
						return
					}
					mu.Lock()
					for _, d := range due {
						seen[d.ID]++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d mails leased, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s leased %d times", id, k)
		}
	}
}
