// Package linux reads the metadata of Linux packages: Debian packages (.deb), RPM packages
// (.rpm) and type 2 AppImages. It registers itself with appinfo (import it for its init), and
// like every parser there it reads only through an io.ReaderAt, with few ranged reads, each
// bounded, and never the payload.
//
// # Debian packages (.deb)
//
// A .deb is an ar archive: debian-binary, control.tar[.gz|.xz|.zst], data.tar.*. The parser
// reads the first 4 KiB (the ar headers and, usually, the whole control member), walks the
// 60-byte member headers skipping members by their sizes (members named "_…", such as debsigs
// signatures, may sit between; dpkg ignores them too), reads the control member (at most
// MaxDebControlBytes, usually already in hand), inflates it (gzip and xz as a stream that stops
// at ./control, zstd whole; at most MaxDebControlInflated either way; at most maxTarEntries tar
// entries) and reads its ./control file (at most MaxDebControlFile). data.tar is never read, but
// its member header is, and its declared size must fit in the file: a truncated upload is
// refused. Fields come from the control file's first paragraph:
//
//   - BundleID and Name: Package. (A .deb names no display name; the .desktop file that might
//     carry one is inside data.tar.)
//   - ReleaseVersion: the upstream version, Version without its epoch ("1:") and Debian revision
//     ("-1"); BuildVersion: the full Version; Properties["Revision"] and ["Epoch"] when present.
//   - Architectures: [Architecture] in Debian's words ("amd64", "arm64", "all").
//   - Publisher: Maintainer as written ("Name <mail>"); Description: Description's first line.
//   - Properties, when present, under the control file's names: the relation fields (Depends,
//     Pre-Depends, Recommends, Suggests, Enhances, Breaks, Conflicts, Replaces, Provides,
//     Built-Using), Section, Priority, Homepage, Installed-Size (digits only), Multi-Arch,
//     Essential, each at most 4 KiB; and ["Extended-Description"], Description's further lines
//     (without their leading space; "." for a paragraph break), at most 4 KiB of whole lines. The
//     APT index (pkg/repos/apt) repeats them.
//   - Icon: none. It lives in data.tar, a compressed stream without an index: reaching it means
//     inflating the payload, which can be gigabytes.
//
// # RPM packages (.rpm)
//
// An .rpm is a 96-byte lead, a signature header, the main header and the compressed cpio
// payload. The parser reads the lead with the signature header's intro, the signature header
// with the main header's intro (one read when under maxRPMSigRead; the SIZE it records is
// checked against the file, so a truncated upload is refused), the main header's index (16
// bytes per tag, at most maxRPMIndex tags) and the span of its data store that holds the tags
// it uses (at most maxRPMSpan bytes): four reads. The payload and the rest of the header (file
// lists, changelog, scripts) are never read.
//
//   - BundleID and Name: Name. ReleaseVersion: Version. BuildVersion: "Version-Release".
//   - Properties["Release"], ["Epoch"], ["License"], ["URL"]; ["SourcePackage"] = "true" for a
//     source package (one without a SOURCERPM tag, rpm's own rule).
//   - Architectures: [Arch] ("x86_64", "aarch64", "noarch").
//   - Publisher: Vendor, else Packager. Description: Summary (its first, untranslated string).
//
// The header reader is written here: github.com/cavaliergopher/rpm is not served by the module
// proxy Slipway uses, and (in the version read for this decision) its ReadPackageHeader reads
// each header whole through an io.Reader (the main header holds every file's name, digest and
// size: megabytes for a large package), allocates the index and the data store at the sizes the
// header declares without checking them, and scans strings in the store without bounds checks.
//
// # AppImages
//
// A type 2 AppImage is an ELF executable (the runtime; "AI\x02" at offset 8) followed by a
// squashfs image of the AppDir. The squashfs starts where the ELF ends: the end of the section
// header table (e_shoff + e_shentsize×e_shnum) or of the last section's data if that is further,
// as the AppImage runtime computes it. The parser reads the ELF header, the last section header
// with the squashfs superblock after it, then from the squashfs only the metadata blocks and
// file blocks it needs: the root directory, the root *.desktop file, the icon.
//
//   - BundleID: the desktop file's name without ".desktop" (the AppImage's desktop id, which
//     AppImage tools also name the icon after). Name: the desktop entry's Name, else BundleID.
//   - ReleaseVersion and BuildVersion: X-AppImage-Version (both empty when it is absent).
//   - Description: Comment. Properties["Categories"]: Categories without the final ";".
//   - Architectures: from the runtime's e_machine: "x86_64", "aarch64", "armhf", "i686" (others
//     leave it empty).
//   - Icon: the root <Icon>.png named by the desktop entry's Icon key (an Icon that is a path is
//     not looked up), else .DirIcon; symbolic links are followed inside the image (at most
//     maxSymlinkHops). Only PNG icons are kept
//     (an SVG icon gives none), at most appinfo.MaxIconBytes and maxIconSide pixels a side; a
//     broken or oversized icon costs the icon, not the upload.
//   - Publisher: none (AppImages have no standard field for it).
//
// The squashfs reader is written here (squashfs.go): of the libraries the brief names,
// github.com/CalebQ42/squashfs is not served by the module proxy, and
// github.com/diskfs/go-diskfs/filesystem/squashfs reads the whole fragment, id and xattr tables
// when it opens an image, allocates from sizes it reads without checking them against the image
// (fragment blocks, xattr data up to a declared end) and slices fragment data unchecked: tried
// (v1.9.4) on a synthetic image whose desktop file's fragment offset points past its fragment
// block, reading the file panics with "slice bounds out of range". It also brings in logrus and
// an LZO library. The reader here reads only
// the metadata and data blocks a lookup needs, checks every offset and size against the image,
// decompresses each block to at most its format's size (8 KiB of metadata, one data block),
// bounds path walks (maxPathSteps components, maxSymlinkHops links; a name found in a directory
// is remembered), so a directory entry pointing back at an ancestor cannot loop, bounds the work
// of a parse (maxSquashBlocks blocks, maxSquashInflate bytes inflated, maxDirScan bytes of
// listings scanned, each listing at most maxDirBytes), and supports the compressors AppImage tools use: gzip (mksquashfs's
// default), xz and zstd. lzo, lz4 and lzma images are refused with a message saying so.
//
// # Decompressors
//
// gzip (compress/gzip, compress/zlib); zstd (github.com/klauspost/compress/zstd, whole blocks
// with DecodeAll capped at the output limit, which also bounds the window it accepts); xz: the
// container (stream and block headers, checks) is read here and each block's LZMA2 data is
// decoded by github.com/ulikunitz/xz/lzma (one LZMA2 filter, as xz, dpkg-deb and mksquashfs
// write by default; blocks with BCJ or delta filters, such as mksquashfs -Xbcj may write, are
// refused), because ulikunitz/xz's own xz reader allocates the
// dictionary size a block header declares (up to 4 GiB). Here the dictionary is the smallest of
// the declared size, the output limit and the block's declared uncompressed size (dpkg-deb and
// mksquashfs declare it): a match never reaches back further than the block's output so far, so
// a valid stream decodes the same, and a 10 KiB control.tar costs a 10 KiB dictionary, not the
// 8 MiB that xz's default preset declares.
//
// Every problem with the input is an errs.Invalid error whose message says what was wrong.
package linux

import (
	"io"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Caps on what one parse reads or keeps. Over a cap, the parse fails with errs.Invalid.
const (
	// MaxDebControlBytes bounds a .deb's control.tar member as stored; real ones are a few KiB
	// (the md5sums of thousands of files make a few hundred).
	MaxDebControlBytes = 4 << 20
	// MaxDebControlInflated bounds control.tar once inflated.
	MaxDebControlInflated = 16 << 20
	// MaxDebControlFile bounds the ./control file itself.
	MaxDebControlFile = 1 << 20
	// MaxDesktopFileBytes bounds an AppImage's .desktop file (translations make them a few KiB).
	MaxDesktopFileBytes = 1 << 20
	// maxTextLen bounds every text value kept from a package.
	maxTextLen = 4096
	// maxParseBytes is the most one parse allocates (appinfo.Family.MaxParseBytes): an
	// AppImage's squashfs inflated (its directories, the .desktop file, the icon), the most of
	// the formats' bounds.
	maxParseBytes = maxAppImageParseBytes
	// maxAppImageParseBytes bounds an AppImage's parse: what its squashfs may inflate, the
	// directories scanned, the .desktop file and the icon.
	maxAppImageParseBytes = maxSquashInflate + maxDirScan + MaxDesktopFileBytes + appinfo.MaxIconBytes + 1<<20
	// maxDebParseBytes bounds a .deb's parse: the control member as stored, inflated, and its
	// control file, each with a copy.
	maxDebParseBytes = MaxDebControlBytes + 2*MaxDebControlInflated + 2*MaxDebControlFile
)

// parseBytes is the bound of a parse of the file in r, by the parser its first bytes pick
// (appinfo.Family.FileParseBytes): an RPM's header is read raw from the file.
func parseBytes(r io.ReaderAt, size int64) int64 {
	var b [24]byte
	n, _ := r.ReadAt(b[:min(size, int64(len(b)))], 0)
	switch h := b[:n]; {
	case isDebHead(h):
		return maxDebParseBytes
	case isRPMHead(h):
		return 2*size + 1<<20
	}
	return maxAppImageParseBytes
}

// Family registration: each format is recognised by its first bytes.
func init() {
	appinfo.Register(appinfo.Family{Name: "linux", Takes: "a Linux .deb, .rpm or .AppImage", Platform: func(*zipread.Archive) appinfo.Platform { return appinfo.Linux },
		MaxParseBytes: maxParseBytes, DecodeBytes: 1 << 20, FileParseBytes: parseBytes,
		ClaimFile: func(r io.ReaderAt, size int64) appinfo.FileParser {
			var head [24]byte
			n, _ := r.ReadAt(head[:min(size, int64(len(head)))], 0)
			switch b := head[:n]; {
			case isDebHead(b):
				return ParseDeb
			case isRPMHead(b):
				return ParseRPM
			case isAppImageHead(b, 2):
				return ParseAppImage
			case isAppImageHead(b, 1):
				return func(io.ReaderAt, int64) (*appinfo.Info, error) {
					return nil, errs.Invalidf("this is a type 1 AppImage (an ISO 9660 image); Slipway reads type 2 AppImages only: rebuild it with a current appimagetool")
				}
			}
			return nil
		}})
}

// head reads the first n bytes of r (fewer when the file is shorter), for the Is* checks.
func head(r io.ReaderAt, size int64, n int) []byte {
	b := make([]byte, min(size, int64(n)))
	k, _ := r.ReadAt(b, 0)
	return b[:k]
}

// clean makes a text value read from a package safe to keep (appinfo.CleanText).
func clean(s string) string { return appinfo.CleanText(s, maxTextLen) }
