// Drives speech-infra gateway with the official openai npm SDK (a client no one here wrote), for
// gateway_test.go: argv baseURL busyBaseURL outDir text. For each of wav, pcm, opus and mulaw it streams
// audio.speech.create's body to outDir/out.<format>, and as an OpenAI client would call it (voice "alloy", no
// response_format) to outDir/out.default; it reads GET /v1/audio/voices, lists the models, retrieves the model
// and an unknown one; against busyBaseURL (an endpoint whose one queue place it fills first) it reports how
// the SDK saw the shield's answer. Prints one JSON object on stdout.
import OpenAI from "openai";
import { writeFile } from "node:fs/promises";

const [, , baseURL, busyURL, outDir, text] = process.argv;
const apiKey = process.env.GATEWAY_API_KEY || "unused-on-loopback";
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const result = { formats: {} };

for (const format of ["wav", "pcm", "opus", "mulaw"]) {
  const t0 = performance.now();
  const res = await client.audio.speech.create({ model: "espeak-ng", voice: "en-us", input: text, response_format: format });
  const chunks = [];
  let first = null;
  for await (const c of res.body) {
    if (first === null) first = performance.now() - t0;
    chunks.push(Buffer.from(c));
  }
  const buf = Buffer.concat(chunks);
  await writeFile(`${outDir}/out.${format}`, buf);
  result.formats[format] = { bytes: buf.length, contentType: res.headers.get("content-type"), firstChunkMs: first, chunks: chunks.length };
}

{
  const res = await client.audio.speech.create({ model: "espeak-ng", voice: "alloy", input: text });
  const buf = Buffer.from(await res.arrayBuffer());
  await writeFile(`${outDir}/out.default`, buf);
  result.default = { bytes: buf.length, contentType: res.headers.get("content-type") };
}

result.voices = await client.get("/audio/voices");
result.models = await client.models.list().then((p) => p.data.map((m) => m.id));
result.model = await client.models.retrieve("espeak-ng");
try {
  await client.models.retrieve("tts-1");
  result.unknownModel = { error: null };
} catch (e) {
  result.unknownModel = { notFound: e instanceof OpenAI.NotFoundError, status: e.status, code: e.code ?? null, param: e.param ?? null, type: e.type ?? null };
}

const busy = new OpenAI({ baseURL: busyURL, apiKey, maxRetries: 0 });
const body = { model: "calibration", voice: "calibration", input: "Hold the only place in the queue.", response_format: "pcm" };
const hold = busy.audio.speech.create(body);
await new Promise((r) => setTimeout(r, 700));
try {
  await busy.audio.speech.create(body);
  result.busy = { error: null };
} catch (e) {
  result.busy = {
    rateLimit: e instanceof OpenAI.RateLimitError,
    status: e.status,
    retryAfter: e.headers?.get?.("retry-after") ?? null,
    code: e.code ?? null,
    type: e.type ?? null,
    message: e.message,
  };
}
const held = await hold;
let heldBytes = 0;
for await (const c of held.body) heldBytes += c.length;
result.busy.heldBytes = heldBytes;

console.log(JSON.stringify(result));
