package e2e_test

import (
	"testing"

	"github.com/slipwayhq/slipway/test/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }
