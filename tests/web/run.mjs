#!/usr/bin/env node
// The web demo in real headless Chromium (Debian's chromium, driven by playwright-core).
//
//   node tests/web/run.mjs [SITE]     SITE: the folder `make web` built (default build/web)
//
// Serves SITE on localhost (counting the bytes served), then: draws known digits' strokes on the
// pad (CPU path, then GPU path on SwiftShader's software WebGPU) and checks the classes; picks and
// uploads sample images and checks the top-1; checks the bad inputs (not an image, a huge image, a
// broken image, a record that fails to load, a browser without WebGPU); reloads offline. Any page
// error or console error fails. Screenshots go to test-artifacts/web/. Prints the page weight, the
// time to first prediction and the time per prediction; exits 1 on any failure.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SITE = path.resolve(process.argv[2] || path.join(ROOT, "build", "web"));
const ARTIFACTS = path.join(ROOT, "test-artifacts", "web");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--enable-features=Vulkan"];
const GOALS = { weightBytes: 600 * 1000, firstPredictionMs: 2000, cpuPredictionMs: 50 };
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm",
  ".json": "application/json", ".png": "image/png" };

let chromium;
try {
  ({ chromium } = await import(path.join(ROOT, "node_modules", "playwright-core", "index.mjs")));
} catch (e) {
  console.error(`tests/web: playwright-core is missing (run \`make test-web\`, which installs it): ${e.message}`);
  process.exit(2);
}
for (const [what, p] of [["the built site (run `make web`)", path.join(SITE, "files.json")], ["Chromium (apt-get install chromium)", CHROMIUM]]) {
  if (!fs.existsSync(p)) {
    console.error(`tests/web: ${what} is missing: ${p}`);
    process.exit(2);
  }
}

// ---- a static server that counts what it serves
let served = [];
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, "http://x").pathname);
  const file = path.join(SITE, url.endsWith("/") ? url + "index.html" : url);
  if (!file.startsWith(SITE) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  const body = fs.readFileSync(file);
  served.push([url, body.length]);
  res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream", "Cache-Control": "no-cache" });
  res.end(body);
});
await new Promise((done) => server.listen(0, "127.0.0.1", done));
const BASE = `http://127.0.0.1:${server.address().port}/`;

const failures = [];
const report = {};
function goal(ok, what) {
  console.log(`${ok ? "goal met   " : "goal MISSED"} ${what}`);
  report.goals_missed = (report.goals_missed || 0) + (ok ? 0 : 1);
}
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
}

// Strokes of each digit, in pad fractions (0..1), one list of points per stroke
const DIGITS = {
  0: [ellipse(0.5, 0.5, 0.24, 0.36)],
  1: [[[0.42, 0.22], [0.55, 0.1], [0.55, 0.9]]],
  2: [[[0.28, 0.3], [0.38, 0.15], [0.55, 0.12], [0.7, 0.22], [0.7, 0.38], [0.3, 0.85], [0.75, 0.85]]],
  3: [[[0.3, 0.18], [0.5, 0.1], [0.68, 0.2], [0.66, 0.38], [0.48, 0.48], [0.7, 0.6], [0.7, 0.78], [0.5, 0.9], [0.28, 0.82]]],
  4: [[[0.55, 0.1], [0.25, 0.6], [0.8, 0.6]], [[0.62, 0.3], [0.62, 0.92]]],
  5: [[[0.72, 0.12], [0.35, 0.12], [0.32, 0.45], [0.55, 0.42], [0.7, 0.55], [0.7, 0.75], [0.5, 0.88], [0.3, 0.82]]],
  6: [[[0.65, 0.1], [0.4, 0.35], [0.3, 0.65], [0.4, 0.88], [0.6, 0.88], [0.68, 0.7], [0.55, 0.55], [0.35, 0.62]]],
  7: [[[0.25, 0.12], [0.75, 0.12], [0.45, 0.9]]],
  8: [[[0.62, 0.2], [0.5, 0.1], [0.36, 0.2], [0.4, 0.38], [0.6, 0.55], [0.65, 0.75], [0.5, 0.9], [0.35, 0.75],
    [0.4, 0.55], [0.6, 0.38], [0.64, 0.22]]],
  9: [[[0.65, 0.3], [0.5, 0.15], [0.35, 0.28], [0.4, 0.45], [0.62, 0.4], [0.65, 0.3], [0.6, 0.9]]],
};
function ellipse(cx, cy, rx, ry) {
  const pts = [];
  for (let i = 0; i <= 24; i++) pts.push([cx + rx * Math.sin((2 * Math.PI * i) / 24), cy - ry * Math.cos((2 * Math.PI * i) / 24)]);
  return pts;
}

async function draw(page, strokes) {
  const box = await page.locator("#pad").boundingBox();
  for (const stroke of strokes) {
    const [x0, y0] = stroke[0];
    await page.mouse.move(box.x + x0 * box.width, box.y + y0 * box.height);
    await page.mouse.down();
    for (const [x, y] of stroke.slice(1)) await page.mouse.move(box.x + x * box.width, box.y + y * box.height, { steps: 2 });
    await page.mouse.up();
  }
  // the last prediction is the one after the pen lifted: wait until no more come
  let n = -1;
  for (;;) {
    await page.waitForTimeout(100);
    const m = await page.evaluate(() => window.ember.times.length);
    if (m === n) break;
    n = m;
  }
  return page.locator("#class").textContent();
}

async function open(browser, options = {}) {
  const context = await browser.newContext({ serviceWorkers: options.serviceWorkers || "allow" });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push("page error: " + e.message));
  // WebGPU reports invalid shaders and bindings as console warnings: those fail too
  page.on("console", (m) => {
    if (m.type() === "error" || (m.type() === "warning" && /invalid|error/i.test(m.text()))) errors.push(`console ${m.type()}: ${m.text()}`);
  });
  if (options.init) await page.addInitScript(options.init);
  if (options.route) await page.route(options.route[0], options.route[1]);
  await page.goto(BASE);
  return { context, page, errors };
}

const noErrors = (errors, what) => check(errors.length === 0, `${what}: no page or console errors${errors.length ? ": " + errors.join("; ") : ""}`);
const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, name + ".png") });
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[s.length >> 1] : NaN; };

fs.mkdirSync(ARTIFACTS, { recursive: true });
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", ...WEBGPU_FLAGS] });
try {
  // ---- digits, CPU then GPU; page weight and first prediction
  served = [];
  const { context, page, errors } = await open(browser);
  await page.waitForFunction(() => window.ember.ready || window.ember.lastError, null, { timeout: 30000 });
  check(await page.evaluate(() => window.ember.ready), "the page loads MicroPython, ember and the digits record");
  const got = {};
  for (const d of Object.keys(DIGITS)) {
    got[d] = await draw(page, DIGITS[d]);
    if (d === "3") await shot(page, "digit-3-cpu");
    await page.click("#clear");
  }
  const timing = await page.evaluate(() => window.ember);
  const weight = {};
  for (const [url, n] of served) weight[url] = n;
  report.page_weight_bytes = Object.values(weight).reduce((a, b) => a + b, 0);
  report.page_weight_files = Object.keys(weight).length;
  report.ready_ms = Math.round(timing.readyMs);
  report.first_prediction_ms = Math.round(timing.firstPredictionMs);
  report.first_stroke_ms = Math.round(timing.firstStrokeMs);
  // the page's own share: ready, then the first prediction's run (the rest is the test's pen reaching the pad)
  report.ready_plus_first_prediction_ms = Math.round(timing.readyMs + timing.times[0][2]);
  const cpu = timing.times.filter((t) => t[0] === "cpu").map((t) => t[2]);
  report.cpu_ms_per_prediction_median = +median(cpu.slice(1)).toFixed(2);
  report.cpu_predictions = cpu.length;
  console.log("digits on the CPU: drawn -> predicted " + JSON.stringify(got));
  for (const d of Object.keys(DIGITS)) check(got[d] === d, `CPU path: the strokes of a ${d} are classified ${d} (got ${got[d]})`);
  check(report.page_weight_bytes <= GOALS.weightBytes, `page weight ${report.page_weight_bytes} bytes (${report.page_weight_files} files) <= ${GOALS.weightBytes}`);
  // times are reported against the goals, never asserted: this machine is shared and noisy
  goal(report.ready_plus_first_prediction_ms <= GOALS.firstPredictionMs, `first prediction: ready ${report.ready_ms} ms after navigation + ${timing.times[0][2].toFixed(0)} ms for the prediction (goal ${GOALS.firstPredictionMs}); the test's first stroke came at ${report.first_stroke_ms} ms, its answer at ${report.first_prediction_ms} ms`);
  goal(report.cpu_ms_per_prediction_median <= GOALS.cpuPredictionMs, `CPU path: median ${report.cpu_ms_per_prediction_median} ms per prediction over ${cpu.length} (goal ${GOALS.cpuPredictionMs})`);

  const gpuOn = await page.locator("#gpu").isEnabled();
  check(gpuOn, "the GPU switch is on with a software WebGPU adapter: " + await page.locator("#gpu-why").textContent());
  if (gpuOn) {
    await page.click("#gpu");
    // the replay against the Wgpu backend's own answer on the plan's probe input (tools/web/gpu_plan.py)
    await draw(page, DIGITS[0]);
    const probe = await page.evaluate(async () => {
      const plan = await (await fetch("digits_gpu.json")).json();
      const got = (await window.emberGpu.run("digits", plan.check.input.join(","))).split(",").map(Number);
      return Math.max(...got.map((v, i) => Math.abs(v - plan.check.logits[i])));
    });
    check(probe <= 1e-5, `GPU path: the logits on the plan's probe match the Wgpu backend's (max difference ${probe})`);
    await page.click("#clear");
    const gotGpu = {};
    for (const d of Object.keys(DIGITS)) {
      gotGpu[d] = await draw(page, DIGITS[d]);
      if (d === "3") await shot(page, "digit-3-gpu");
      await page.click("#clear");
    }
    console.log("digits on the GPU: drawn -> predicted " + JSON.stringify(gotGpu));
    for (const d of Object.keys(DIGITS)) check(gotGpu[d] === got[d], `GPU path: a ${d} gets the CPU path's class ${got[d]} (got ${gotGpu[d]})`);
    const gpu = (await page.evaluate(() => window.ember.times)).filter((t) => t[0] === "gpu").map((t) => t[2]);
    report.gpu_ms_per_prediction_median = +median(gpu.slice(1)).toFixed(2);
    check((await page.locator("#timing").getAttribute("data-path")) === "gpu", "the timing line says the GPU path ran: " + await page.locator("#timing").textContent());
    await page.click("#cpu");
  }

  // ---- images: bundled samples, an upload, bad uploads
  await page.click("#tab-shapes");
  await page.waitForSelector("img.s", { timeout: 20000 });
  const samples = JSON.parse(fs.readFileSync(path.join(SITE, "samples", "samples.json"), "utf8"));
  for (const [file, cls] of Object.entries(samples)) {
    await page.click(`img.s[data-file="${file}"]`);
    await page.waitForSelector(`#top5[data-source="${file}"] li`);
    const top = await page.locator("#top5 li").first().getAttribute("data-class");
    check(top === cls, `sample ${file}: top-1 ${top} (expected ${cls}), ${await page.locator("#top5 li").count()} shown`);
  }
  if (gpuOn) {
    await page.click("#gpu");
    await page.click('img.s[data-file="triangle.png"]');
    await page.waitForFunction(() => window.ember.times.at(-1)[0] === "gpu" && window.ember.times.at(-1)[1] === "shapes");
    const top = await page.locator("#top5 li").first().getAttribute("data-class");
    check(top === "triangle", `GPU path: sample triangle.png: top-1 ${top}`);
    await page.click("#cpu");
  }
  const upload = (files) => page.setInputFiles("#file", files);
  await upload(path.join(SITE, "samples", "star.png"));
  await page.waitForSelector('#top5[data-source="star.png"] li');
  check(await page.locator("#top5 li").first().getAttribute("data-class") === "star", "an uploaded star.png: top-1 star");
  await shot(page, "image-upload");
  const bad = [
    [{ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("not an image") }, "is not an image"],
    [{ name: "broken.png", mimeType: "image/png", buffer: Buffer.from("\x89PNG not really") }, "could not be decoded"],
    [{ name: "wide.png", mimeType: "image/png", buffer: png(9000, 8) }, "at most 8192 on a side"],
    [{ name: "big.png", mimeType: "image/png", buffer: Buffer.alloc(21 << 20) }, "at most 20 MB"],
  ];
  for (const [file, says] of bad) {
    await upload(file);
    await page.waitForFunction((s) => document.getElementById("error").textContent.includes(s), says, { timeout: 10000 })
      .catch(() => {});
    const text = await page.locator("#error").textContent();
    check(text.includes(says), `upload ${file.name}: the page says "${says}" (it says "${text}")`);
    check(await page.locator("#top5 li").count() === 0, `upload ${file.name}: no earlier answer left beside the error`);
  }
  await shot(page, "bad-upload");
  noErrors(errors, "the main session");

  // ---- offline: the service worker serves the page and everything it loaded
  await context.setOffline(true);
  await page.reload();
  await page.waitForFunction(() => window.ember.ready || window.ember.lastError, null, { timeout: 30000 });
  check(await page.evaluate(() => window.ember.ready), "offline: the page loads again from its service worker");
  check(await draw(page, DIGITS[7]) === got[7], "offline: a 7 is classified as online");
  await context.close();

  // ---- no WebGPU: the switch is off with a reason, the CPU works
  {
    const s = await open(browser, { init: () => Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined }) });
    await s.page.waitForFunction(() => window.ember.ready, null, { timeout: 30000 });
    const why = await s.page.locator("#gpu-why").textContent();
    check(!(await s.page.locator("#gpu").isEnabled()) && why.includes("no WebGPU"), `without WebGPU the GPU switch is off and says why: "${why}"`);
    check(await draw(s.page, DIGITS[4]) === got[4], "without WebGPU the CPU path still classifies a 4");
    await shot(s.page, "no-webgpu");
    noErrors(s.errors, "without WebGPU");
    await s.context.close();
  }

  // ---- a record that fails to load: said on the page, never blank
  {
    const s = await open(browser, { serviceWorkers: "block", route: ["**/digits_cnn.safetensors", (r) => r.fulfill({ status: 200, body: Buffer.from("garbage, not safetensors") })] });
    await s.page.waitForFunction(() => window.ember.lastError, null, { timeout: 30000 });
    const text = await s.page.locator("#error").textContent();
    check(text.includes("digits_cnn.safetensors failed to load"), `a broken record is reported: "${text}"`);
    await shot(s.page, "broken-record");
    noErrors(s.errors, "the broken record");
    await s.context.close();
  }
} finally {
  await browser.close();
  server.close();
}
console.log("web report: " + JSON.stringify(report));
fs.writeFileSync(path.join(ARTIFACTS, "report.json"), JSON.stringify(report, null, 1));
if (failures.length) {
  console.error(`tests/web: ${failures.length} failed`);
  process.exit(1);
}
console.log("tests/web: all passed");

// A grey PNG of w x h zeros (small on disk, large once decoded)
function png(w, h) {
  const chunk = (kind, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(kind), data]);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(zlib.crc32(body) >>> 0);
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 0;
  const raw = Buffer.alloc((w + 1) * h);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}
