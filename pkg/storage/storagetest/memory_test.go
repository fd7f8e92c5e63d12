package storagetest_test

import (
	"testing"

	"github.com/slipwayhq/slipway/pkg/storage"
	"github.com/slipwayhq/slipway/pkg/storage/storagetest"
)

// The in-memory backend that tests use in place of a real one behaves as every backend does.
func TestMemoryConformance(t *testing.T) {
	storagetest.Run(t, func(*testing.T) storage.Backend { return storagetest.NewMemory() })
}
