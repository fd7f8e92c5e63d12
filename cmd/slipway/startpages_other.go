//go:build !linux

package main

// dropStartupPages is a no-op where the executable's mappings are not known.
func dropStartupPages() (int64, error) { return 0, nil }
