// The G2P oracle: runs the reference phonemizer of kokoro-js (the JavaScript
// port published with Kokoro) over the golden corpus and writes the golden
// file the container's Go tests compare their G2P with.
//
//   node container/testdata/g2p/oracle.mjs corpus.txt golden.jsonl
//   (or: make container-g2p-golden)
//
// kokoro-js keeps its phonemize(text, language = "a", norm = true) internal:
// dist/kokoro.js exports only KokoroTTS, TextSplitterStream and env. This
// script reaches it by reading the installed node_modules/kokoro-js/dist/kokoro.js
// (checked against the sha256 of the 1.2.1 release, so another version is
// refused rather than silently used), finding the one async function with that
// signature, and writing a copy of the module next to it that also exports
// that function; the copy is imported, so its own imports (phonemizer, i.e.
// espeak-ng compiled to WebAssembly) resolve from the same node_modules.
// Nothing of kokoro-js is copied into this repository.
//
// Corpus: one sentence a line; blank lines and lines starting with # are
// skipped. Golden: one JSON object a line, {"text", "a", "b"}: the reference
// phonemes for an American (a) and a British (b) voice.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const KOKORO_JS_VERSION = "1.2.1";
const KOKORO_JS_SHA256 = "31b1db2aa4a7411f55786900f0cbdd0351f1063859b107f9a99699a03b098b7d";

function die(msg) {
  process.stderr.write(`oracle: ${msg}\n`);
  process.exit(2);
}

const [corpusPath, goldenPath] = process.argv.slice(2);
if (!corpusPath || !goldenPath || process.argv.length !== 4) {
  die("usage: node oracle.mjs CORPUS.txt GOLDEN.jsonl");
}

// kokoro-js's "exports" map hides package.json from require.resolve, so look
// for node_modules/kokoro-js from the working directory up.
let pkgDir = "";
for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
  if (existsSync(path.join(dir, "node_modules", "kokoro-js", "package.json"))) {
    pkgDir = path.join(dir, "node_modules", "kokoro-js");
    break;
  }
  if (path.dirname(dir) === dir) {
    die("kokoro-js is not installed: run `make deps` (npm ci) at the repository root");
  }
}
const pkgJSON = path.join(pkgDir, "package.json");
const version = JSON.parse(readFileSync(pkgJSON, "utf8")).version;
if (version !== KOKORO_JS_VERSION) {
  die(`kokoro-js ${version} is installed; the golden file is made with ${KOKORO_JS_VERSION}`);
}
const distPath = path.join(pkgDir, "dist", "kokoro.js");
const src = readFileSync(distPath, "utf8");
const sha = createHash("sha256").update(src).digest("hex");
if (sha !== KOKORO_JS_SHA256) {
  die(`${distPath} has sha256 ${sha}, not the 1.2.1 release's ${KOKORO_JS_SHA256}`);
}
const sig = /async function ([A-Za-z_$][\w$]*)\(e,a="a",t=!0\)/g;
const names = [...src.matchAll(sig)].map((m) => m[1]);
if (names.length !== 1) {
  die(`expected one phonemize(text, language="a", norm=true) in ${distPath}, found ${names.length}`);
}
const shim = path.join(pkgDir, "dist", `.oracle-phonemize-${process.pid}.mjs`);
writeFileSync(shim, `${src}\nexport { ${names[0]} as phonemize };\n`);
let phonemize;
try {
  ({ phonemize } = await import(pathToFileURL(shim).href));
} finally {
  rmSync(shim, { force: true });
}

const lines = readFileSync(corpusPath, "utf8")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l !== "" && !l.startsWith("#"));
const out = [];
for (const text of lines) {
  // One at a time: the WebAssembly espeak-ng is one instance.
  const a = await phonemize(text, "a");
  const b = await phonemize(text, "b");
  out.push(JSON.stringify({ text, a, b }));
}
writeFileSync(goldenPath, out.join("\n") + "\n");
process.stderr.write(`oracle: ${out.length} sentences -> ${goldenPath}\n`);
