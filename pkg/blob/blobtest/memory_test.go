package blobtest_test

import (
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
)

// The in-memory backend that tests use in place of a real one behaves as every backend does.
func TestMemoryConformance(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Backend { return blobtest.NewMemory() })
}
