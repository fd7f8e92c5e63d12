package appinfo

// Placeholder: replaced by the Android parsers (apk.go, aab.go, androidicon.go).

import (
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

func parseAPK(a *zipread.Archive) (*Info, error) { return nil, errs.Invalidf("apk: not implemented") }
func parseAAB(a *zipread.Archive) (*Info, error) { return nil, errs.Invalidf("aab: not implemented") }
