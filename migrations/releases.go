package migrations

// Release is a published release of Slipway and the newest migration it carries.
type Release struct {
	// Version is the release's semantic version without the "v" of its git tag: "0.1.0".
	Version string
	// Schema is the newest migration in the release: the schema its binary serves.
	Schema uint
}

// Releases lists every published release, oldest first; a release adds its line in the commit
// that its tag points to, beside its CHANGELOG.md section. The migrator reads it to enforce the
// upgrade policy (CHANGELOG.md, "Upgrading"): a binary migrates a database from the schema of the
// release before its own or a later one (or from nothing), never across a release, and the
// migration-rules test reads it to date each migration (the expand/contract rule). A patch
// release carries no migration: its Schema is its minor release's.
var Releases = []Release{}
