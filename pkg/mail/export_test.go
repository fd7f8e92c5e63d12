package mail

import "time"

// SetIdleFor shortens how long c keeps an unused session, for tests.
func SetIdleFor(c *Client, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idleFor = d
	if c.sweeper != nil {
		c.sweeper.Reset(d)
	}
}

// IdleSessions is how many sessions c keeps now.
func IdleSessions(c *Client) int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.idle) }
