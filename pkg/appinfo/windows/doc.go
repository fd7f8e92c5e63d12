// Package windows reads the metadata of Windows packages for appinfo: PE executables (.exe), a
// zip holding an .exe, Windows Installer databases (.msi), and MSIX/APPX packages and bundles.
// It registers two families from init: "windows" (PE and MSI by their first bytes, MSIX by
// AppxManifest.xml or AppxMetadata/AppxBundleManifest.xml in the zip directory) and, as a
// Fallback, "windows-exe-zip" (a zip with an .exe anywhere, claimed only when no other platform
// claims the zip). Import it for its side effect, like an image decoder.
//
// Every parser reads through the io.ReaderAt with ranged reads: headers, directories and the few
// blocks it needs, never a payload. Every count, size and offset read from a file is checked
// against the file and a cap before anything is allocated; problems are errs.Invalid errors.
// An icon or logo that is missing or does not decode is skipped (Icon nil), never an error.
//
// # How each Info field is derived
//
// Every format: Platform appinfo.Windows, Device appinfo.DeviceWindows.
//
// .exe (Format appinfo.FormatEXE; appinfo.FormatEXEZip for the zipped form), from the first
// RT_VERSION resource's StringFileInfo (the first string table that has a key wins) and
// VS_FIXEDFILEINFO:
//   - Name: ProductName, else FileDescription.
//   - BundleID: a PE has no identity; ProductName stands in, else InternalName, else
//     OriginalFilename (the upload form can override it).
//   - ReleaseVersion: ProductVersion, else the fixed product version ("a.b.c.d"), else the
//     FileVersion string or the fixed file version.
//   - BuildVersion: FileVersion, else the fixed file version, else ReleaseVersion.
//   - Publisher: CompanyName. Description: FileDescription.
//   - Architectures: the COFF Machine: "x86", "x64", "arm64" (also ARM64EC/ARM64X), "arm";
//     empty for other machines; "neutral" for a .NET assembly built for Any CPU (an x86 PE
//     whose COR20 header says IL only, neither 32-bit required nor preferred).
//   - Icon: the largest image (pixels, then bit depth) of the first RT_GROUP_ICON, read from
//     RT_ICON; a PNG image is kept as is, a DIB (1, 4, 8, 24 or 32 bits) is converted to PNG
//     with its AND mask as alpha (a 32-bit image's own alpha wins when it has one). Images over
//     256 pixels are refused, as icon formats cannot express them.
//   - Properties: FileVersion, InternalName, OriginalFilename, LegalCopyright when present;
//     "Executable" (the entry's path) for a zipped .exe.
//   - A PE without a version resource (a Go binary) gives the architecture only: the upload's
//     form fields must name it.
//
// Zip holding an .exe: the shallowest .exe (the largest among equally shallow ones, ignoring
// __MACOSX/), parsed as above (see exezip.go for how a deflated one is read).
//
// .msi (Format appinfo.FormatMSI), from the Property table and the summary information:
//   - Name and BundleID: ProductName (the same stand-in as for an .exe, so an installer and the
//     program it installs can share a channel; the UpgradeCode, the installer's own identity
//     across versions, is in Properties).
//   - ReleaseVersion and BuildVersion: ProductVersion. Publisher: Manufacturer.
//   - Description: ARPCOMMENTS, else the summary's Comments.
//   - Architectures: the summary's Template platform: Intel → "x86", x64/AMD64 → "x64",
//     Arm64 → "arm64", Arm → "arm", Intel64 → "ia64".
//   - Icon: the Icon table's stream named by ARPPRODUCTICON, when it is an .ico file.
//   - Properties: ProductCode, UpgradeCode, ProductLanguage, and PackageCode (the summary's
//     revision number).
//
// .msix/.appx (Format appinfo.FormatMSIX), from AppxManifest.xml:
//   - BundleID: Identity Name. ReleaseVersion and BuildVersion: Identity Version.
//   - Publisher: Identity Publisher, the certificate subject ("CN=…, O=…, C=US").
//   - Name: Properties/DisplayName; when it is an ms-resource: reference (resolved only through
//     resources.pri, which the parser does not read), the first Application's
//     uap:VisualElements DisplayName, else the Identity Name.
//   - Description: Properties/Description, else the VisualElements Description (not
//     ms-resource references).
//   - MinOS: the first Dependencies/TargetDeviceFamily's MinVersion ("10.0.17763.0"); Windows 8
//     manifests: Prerequisites/OSMinVersion.
//   - Architectures: Identity ProcessorArchitecture, "neutral" when absent.
//   - Permissions: the Name of every element under Capabilities (Capability, uap:Capability,
//     rescap:Capability, DeviceCapability), in order, without repeats.
//   - Icon: the largest existing variant of Properties/Logo: the file itself or any name that
//     adds qualifiers (Assets/StoreLogo.scale-200.png, Assets/scale-200/StoreLogo.png),
//     high-contrast variants last; a JPEG is re-encoded to PNG.
//   - Properties: PublisherDisplayName, TargetDeviceFamily (every family's Name, joined by ", ").
//
// .msixbundle/.appxbundle (Format appinfo.FormatMSIXBundle), from AppxBundleManifest.xml:
// BundleID, versions and Publisher from its Identity; Architectures from every application
// package (resource packages are skipped); the main package is the first application package,
// read as a zip within the zip when it is stored (as bundles store them) for Name, Description,
// Permissions, MinOS, Properties and Icon as above; it must have the bundle's Identity Name.
// A compressed main package is not inflated: Name is then the Identity Name, and MinOS comes
// from the bundle manifest. Properties also has "MainPackage" (its file name). Packages inside
// the main package are not followed, so nesting stops at one level.
//
// # Sizes
//
// The zip formats are cut into components from their central directory (sizes.go): an MSIX by
// top-level folder, its own files (manifest, block map, signature, content types) as "Package
// metadata"; a bundle by package; a zip holding an .exe by top-level folder below the folders
// every entry shares, the main .exe on its own. A bundle's largest files list those of the main
// package, opened in place already, under its name. An .exe and an .msi get Download alone.
//
// # Formats read without a library
//
// PE headers and resources (pe.go): debug/pe reads the COFF symbol and string tables, often
// megabytes that a ranged reader would fetch for nothing, and has no resource reader.
// Compound files (cfb.go): github.com/richardlehane/mscfb reads every directory sector and the
// whole mini stream chain when it opens a file, with a 4-byte ReadAt per FAT lookup, and keeps an
// object per directory entry; cfb.go reads each FAT sector once, merges contiguous sectors into
// one read, and caps the directory. MSI tables and string pool (msi.go) have no Go library.
package windows
