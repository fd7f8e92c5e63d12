package main

import (
	"fmt"
	"io"

	"github.com/slipwayhq/slipway/pkg/repokey"
)

// repoKeyCmd: slipway repo-key generate [--name NAME] [--email ADDRESS] writes a new armored
// OpenPGP private key (Ed25519, no passphrase) for SLIPWAY_REPO_KEY_FILE to standard output, and
// its fingerprint to standard error. It needs no database and no configuration.
func repoKeyCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "generate" {
		return usageError("want: generate [--name NAME] [--email ADDRESS]")
	}
	fs := newFlagSet("repo-key generate", stderr)
	name := fs.String("name", "Slipway repository signing key", "the key's user id name, which apt-key and gpg show")
	email := fs.String("email", "", "the key's user id email (optional)")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	key, err := repokey.Generate(*name, *email)
	if err != nil {
		return err
	}
	k, err := repokey.Parse(key)
	if err != nil {
		return err
	}
	if _, err := stdout.Write(key); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "generated OpenPGP key %s; keep the file readable by its owner only (chmod 600) and name it in SLIPWAY_REPO_KEY_FILE\n", k.Fingerprints()[0])
	return nil
}
