// The page: MicroPython-wasm with ember.micro (the CPU path), the WebGPU bridge (gpu.js), the
// digit pad and the image classifier. Every failure is shown in #error, never a blank page.
const $ = (id) => document.getElementById(id);
const MAX_UPLOAD = 20 << 20; // bytes
const MAX_SIDE = 8192; // pixels
let mp = null, infer = null, path = "cpu", gpu = null, adapter = null;
const gpuReady = {}; // name -> the promise of its GPU plan
let gpuStart = null;
const records = {}; // name -> ArrayBuffer (the GPU bridge reads the same bytes)
const classes = {};
// what the page did, for the browser test (tests/web/run.mjs) and the curious: times are ms
window.ember = { ready: false, readyMs: null, firstStrokeMs: null, firstPredictionMs: null, times: [] };

function showError(text) {
  $("error").textContent = text;
  window.ember.lastError = text;
}
window.addEventListener("error", (e) => showError("error: " + e.message));
window.addEventListener("unhandledrejection", (e) => showError("error: " + (e.reason && e.reason.message || e.reason)));

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

function writeFile(name, bytes) {
  const dir = name.includes("/") ? "/" + name.slice(0, name.lastIndexOf("/")) : null;
  if (dir) mp.FS.mkdirTree(dir);
  mp.FS.writeFile("/" + name, bytes);
}

// Python files and .mpy each model needs (files.json lists what the build made)
async function loadModel(name, files) {
  const mine = Object.keys(files).filter((f) => f.startsWith(name + "_") && !f.endsWith("_gpu.json")
    || (name === "digits" ? /^(ember\/|digits_cnn\.mpy|web_infer|preprocess)/ : /^shapes_cnn\.mpy/).test(f));
  await Promise.all(mine.map(async (f) => {
    const bytes = await fetchBytes(f);
    writeFile(f, bytes);
    if (f === name + "_cnn.safetensors") records[name] = bytes.buffer;
  }));
  if (!infer) {
    mp.runPython("import web_infer");
    infer = mp.pyimport("web_infer");
  }
  try {
    classes[name] = JSON.parse(infer.load(name));
  } catch (e) {
    throw new Error(`the ${name} record ${name}_cnn.safetensors failed to load: ${e.message}`);
  }
}

async function predict(name, values) {
  const csv = values.join(",");
  const t0 = performance.now();
  let probs;
  if (path === "gpu") {
    if (!gpu) gpu = await (gpuStart = gpuStart || import("./gpu.js").then((m) => m.startGpu(adapter)));
    if (!gpuReady[name]) gpuReady[name] = gpu.prepare(name, records[name]);
    await gpuReady[name];
    await mp.runPythonAsync(`_r = await web_infer.predict_gpu(${JSON.stringify(name)}, ${JSON.stringify(csv)})`);
    probs = JSON.parse(mp.globals.get("_r"));
  } else probs = JSON.parse(infer.predict(name, csv));
  const ms = performance.now() - t0;
  if (!probs.every(Number.isFinite)) throw new Error(`the ${path} path gave non-finite probabilities`);
  const e = window.ember;
  e.times.push([path, name, ms]);
  if (e.firstPredictionMs === null) e.firstPredictionMs = performance.now();
  $("timing").textContent = `${ms.toFixed(1)} ms per prediction on the ${path === "gpu"
    ? "GPU (WebGPU: " + gpu.adapter + ", the Wgpu backend's WGSL kernels)"
    : "CPU (ember.micro in MicroPython-wasm)"}`;
  $("timing").dataset.path = path;
  return probs;
}

// ---- digits: the strokes' points, fitted into a 32x32 bitmap (centred, aspect kept) and drawn again
// there with a pen of the training digits' width, then 8x8 counts 0..16 of on pixels per 4x4 block:
// the UCI digits' making, and the same input however large the user wrote
const pad = $("pad"), pen = pad.getContext("2d");
const PEN_32 = 6.5; // pen width in the 32x32 bitmap: the UCI strokes are 5 to 8 pixels wide
let strokes = [];
function clearPad() {
  pen.fillStyle = "#000";
  pen.fillRect(0, 0, pad.width, pad.height);
  strokes = [];
  $("class").textContent = "";
  $("probs").textContent = "";
}

function digitCounts() {
  const pts = strokes.flat();
  if (!pts.length) return null;
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  const x0 = Math.min(...xs), y0 = Math.min(...ys), bw = Math.max(...xs) - x0, bh = Math.max(...ys) - y0;
  const s = (32 - PEN_32) / Math.max(bw, bh, 1e-3), ox = (32 - bw * s) / 2 - x0 * s, oy = (32 - bh * s) / 2 - y0 * s;
  const c = new OffscreenCanvas(32, 32), g = c.getContext("2d", { willReadFrequently: true });
  g.fillStyle = "#000";
  g.fillRect(0, 0, 32, 32);
  g.strokeStyle = "#fff";
  g.lineWidth = PEN_32;
  g.lineCap = g.lineJoin = "round";
  for (const st of strokes) {
    g.beginPath();
    g.moveTo(st[0][0] * s + ox, st[0][1] * s + oy);
    for (const [x, y] of st.length > 1 ? st.slice(1) : [[st[0][0] + 0.01, st[0][1]]]) g.lineTo(x * s + ox, y * s + oy);
    g.stroke();
  }
  const b = g.getImageData(0, 0, 32, 32).data, counts = new Array(64).fill(0);
  for (let y = 0; y < 32; y++) for (let x = 0; x < 32; x++) if (b[4 * (y * 32 + x)] > 127) counts[(y >> 2) * 8 + (x >> 2)]++;
  return counts;
}

function showSeen(counts) {
  const g = $("seen").getContext("2d");
  counts.forEach((v, i) => {
    const k = Math.round((v / 16) * 255);
    g.fillStyle = `rgb(${k},${k},${k})`;
    g.fillRect((i % 8) * 8, (i >> 3) * 8, 8, 8);
  });
}

let busy = false, again = false;
async function classifyDigit() {
  if (!window.ember.ready) return;
  if (busy) { again = true; return; }
  const counts = digitCounts();
  if (!counts) return;
  busy = true;
  try {
    showSeen(counts);
    const probs = await predict("digits", counts);
    const best = probs.indexOf(Math.max(...probs));
    $("class").textContent = String(best);
    $("probs").innerHTML = probs.map((p, i) =>
      `<div class="bar">${i} <i style="width:${(p * 150).toFixed(0)}px"></i> ${(p * 100).toFixed(1)}%</div>`).join("");
  } catch (e) {
    showError("prediction failed: " + e.message);
  } finally {
    busy = false;
    if (again) { again = false; live(); }
  }
}

// at most one prediction a frame while the pen moves
let frame = false;
function live() {
  if (frame) return;
  frame = true;
  requestAnimationFrame(() => { frame = false; classifyDigit(); });
}

let drawing = false;
function at(e) {
  const r = pad.getBoundingClientRect();
  return [(e.clientX - r.left) * pad.width / r.width, (e.clientY - r.top) * pad.height / r.height];
}
pad.addEventListener("pointerdown", (e) => {
  drawing = true;
  pad.setPointerCapture(e.pointerId);
  const [x, y] = at(e);
  strokes.push([[x, y]]);
  if (window.ember.firstStrokeMs === null) window.ember.firstStrokeMs = performance.now();
  pen.beginPath();
  pen.moveTo(x, y);
  pen.lineTo(x + 0.1, y);
  pen.stroke();
});
pad.addEventListener("pointermove", (e) => {
  if (!drawing) return;
  const [x, y] = at(e);
  strokes[strokes.length - 1].push([x, y]);
  pen.lineTo(x, y);
  pen.stroke();
  live();
});
const stop = () => { if (drawing) { drawing = false; classifyDigit(); } };
pad.addEventListener("pointerup", stop);
pad.addEventListener("pointercancel", stop);
$("clear").onclick = clearPad;

// ---- images: a file or a sample -> 16x16 grey (the browser's high-quality scaling) -> top 5
async function classifyImage(source, label) {
  const shown = $("shown").getContext("2d");
  shown.clearRect(0, 0, 128, 128);
  $("top5").textContent = "";
  const c = new OffscreenCanvas(16, 16), g = c.getContext("2d", { willReadFrequently: true });
  g.imageSmoothingQuality = "high";
  g.drawImage(source, 0, 0, 16, 16);
  shown.drawImage(source, 0, 0, 128, 128);
  const px = g.getImageData(0, 0, 16, 16).data, grey = [];
  for (let i = 0; i < 256; i++) grey.push(Math.round(0.299 * px[4 * i] + 0.587 * px[4 * i + 1] + 0.114 * px[4 * i + 2]));
  const probs = await predict("shapes", grey);
  const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, 5);
  $("top5").innerHTML = order.map(([p, i]) => `<li data-class="${classes.shapes[i]}">${classes.shapes[i]} ${(p * 100).toFixed(1)}%</li>`).join("");
  $("top5").dataset.source = label;
}

async function upload(file) {
  showError("");
  $("top5").textContent = ""; // a refused file leaves no earlier answer beside its error
  delete $("top5").dataset.source;
  $("shown").getContext("2d").clearRect(0, 0, 128, 128);
  if (!file.type.startsWith("image/")) throw new Error(`${file.name} is not an image (type ${file.type || "unknown"}): choose a PNG, JPEG, GIF or WebP`);
  if (file.size > MAX_UPLOAD) throw new Error(`${file.name} is ${(file.size / 1048576).toFixed(1)} MB: at most ${MAX_UPLOAD >> 20} MB`);
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch (e) {
    throw new Error(`${file.name} could not be decoded as an image (${e.message})`);
  }
  if (bitmap.width > MAX_SIDE || bitmap.height > MAX_SIDE) {
    throw new Error(`${file.name} is ${bitmap.width}x${bitmap.height} pixels: at most ${MAX_SIDE} on a side`);
  }
  await classifyImage(bitmap, file.name);
}
$("file").addEventListener("change", (e) => {
  const f = e.target.files[0];
  if (f) shapesReady().then(() => upload(f)).catch((err) => showError(err.message));
});

let shapesLoad = null;
function shapesReady() {
  if (!shapesLoad) shapesLoad = (async () => {
    const files = JSON.parse(new TextDecoder().decode(await fetchBytes("files.json")));
    await loadModel("shapes", files);
    const samples = JSON.parse(new TextDecoder().decode(await fetchBytes("samples/samples.json")));
    $("samples").innerHTML = Object.keys(samples).map((f) => `<img class="s" src="samples/${f}" alt="${samples[f]}" data-file="${f}">`).join(" ");
    document.querySelectorAll("img.s").forEach((img) => img.onclick = () => {
      showError("");
      classifyImage(img, img.dataset.file).catch((err) => showError(err.message));
    });
  })();
  return shapesLoad;
}

function tab(name) {
  for (const t of ["digits", "shapes"]) {
    $(t).hidden = t !== name;
    $("tab-" + t).classList.toggle("on", t === name);
  }
  if (name === "shapes") shapesReady().catch((e) => showError(e.message));
}
$("tab-digits").onclick = () => tab("digits");
$("tab-shapes").onclick = () => tab("shapes");

function choose(p) {
  path = p;
  $("cpu").classList.toggle("on", p === "cpu");
  $("gpu").classList.toggle("on", p === "gpu");
  classifyDigit();
}
$("cpu").onclick = () => choose("cpu");
$("gpu").onclick = () => choose("gpu");

// the service worker first (sw.js), so the runtime's files pass through it and stay for offline use;
// a browser without one (or a file:// page) just goes on
async function offline() {
  if (!("serviceWorker" in navigator) || !isSecureContext) return;
  try {
    await navigator.serviceWorker.register("sw.js");
    if (navigator.serviceWorker.controller) return;
    await new Promise((done) => {
      navigator.serviceWorker.addEventListener("controllerchange", done, { once: true });
      setTimeout(done, 1500);
    });
  } catch (e) {
    console.warn("no offline copy: " + e.message);
  }
}

async function boot() {
  clearPad();
  pen.strokeStyle = "#fff";
  pen.lineWidth = 18;
  pen.lineCap = pen.lineJoin = "round";
  await offline();
  const files = JSON.parse(new TextDecoder().decode(await fetchBytes("files.json")));
  const { loadMicroPython } = await import("./micropython.mjs");
  mp = await loadMicroPython({ url: "micropython.wasm", stdout: (l) => console.log(l), stderr: (l) => console.warn(l) });
  await loadModel("digits", files);
  window.ember.ready = true;
  window.ember.readyMs = performance.now();
  $("status").textContent = "Ready: draw a digit (mouse or touch).";
  const why = await gpuMissing(files);
  $("gpu").disabled = !!why;
  $("gpu-why").textContent = why ? "GPU unavailable: " + why : "(" + describe(adapter) + ")";
}

// Why the GPU path cannot run here, or null (then ``adapter`` is set); gpu.js loads on first use
async function gpuMissing(files) {
  if (!navigator.gpu) return "this browser has no WebGPU (navigator.gpu is missing)";
  if (!files["digits_gpu.json"]) return "the site was built without GPU plans (no wgpu at build time)";
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (e) {
    return "WebGPU failed: " + e.message;
  }
  return adapter ? null : "WebGPU found no adapter";
}
const describe = (a) => [(a.info || {}).vendor, (a.info || {}).architecture, (a.info || {}).description].filter(Boolean).join(" ") || "WebGPU";

async function start() {
  try {
    await boot();
  } catch (e) {
    $("status").textContent = "Not ready.";
    showError(e.message);
  }
}
start();
