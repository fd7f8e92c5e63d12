//go:build !race

package platforms_test

// raceBuild: see race_test.go.
const raceBuild = false
