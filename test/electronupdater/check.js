// Runs electron-updater's own GenericProvider (its feed-reading code, without Electron) against a
// Slipway channel, as an Electron app on macOS would: node check.js <feed base url> <current version>.
// Prints one JSON line: {"update": bool, "version", "url", "sha512", "size"}.
"use strict";
const http = require("http");
const { HttpExecutor } = require("builder-util-runtime");
const { GenericProvider } = require("electron-updater/out/providers/GenericProvider");
const { findFile } = require("electron-updater/out/providers/Provider");
const semver = require("semver");

class NodeHttpExecutor extends HttpExecutor {
  createRequest(options, callback) {
    return http.request(options, callback);
  }
}

async function main() {
  const [base, current] = process.argv.slice(2);
  const updater = { channel: null, isAddNoCacheQuery: false };
  const provider = new GenericProvider({ provider: "generic", url: base }, updater,
    { isUseMultipleRangeRequest: false, platform: "darwin", executor: new NodeHttpExecutor() });
  const info = await provider.getLatestVersion();
  // MacUpdater installs the .zip: it picks it as findFile(files, "zip", ["pkg", "dmg"]).
  const file = findFile(provider.resolveFiles(info), "zip", ["pkg", "dmg"]);
  const update = semver.gt(info.version, current);
  process.stdout.write(JSON.stringify({ update, version: info.version, url: file && file.url.href,
    sha512: file && file.info.sha512, size: file && file.info.size }) + "\n");
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
