// The GPU path's bridge: replays a model's plan (tools/web/gpu_plan.py: the WGSL kernels and
// dispatches of ember's Wgpu backend for one forward pass) on navigator.gpu. web_infer.predict_gpu
// (Python) calls window.emberGpu.run(name, csv) and awaits the logits, comma-separated.

// {adapter: its name, prepare(name, record)} on the adapter app.js found; loaded on the first GPU use
export async function startGpu(adapter) {
  const device = await adapter.requestDevice();
  const info = adapter.info || {};
  const label = [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "WebGPU";
  const models = {};
  device.lost.then((l) => { window.ember.lastError = "GPU device lost: " + l.message; });

  async function prepare(name, record) {
    const r = await fetch(name + "_gpu.json");
    if (!r.ok) throw new Error(`${name}_gpu.json: HTTP ${r.status}`);
    models[name] = build(device, await r.json(), readRecord(record));
  }

  window.emberGpu = {
    async run(name, csv) {
      const m = models[name];
      if (!m) throw new Error(`the GPU plan of ${name} is not loaded`);
      return (await m.run(new Float32Array(String(csv).split(",").map(Number)))).join(",");
    },
  };
  return { adapter: label, prepare };
}

// {tensor name: Float32Array} of a safetensors file's float32 tensors
function readRecord(buffer) {
  const n = Number(new DataView(buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, n)));
  const out = {};
  for (const [k, v] of Object.entries(header)) {
    if (k === "__metadata__") continue;
    if (v.dtype !== "F32") throw new Error(`record tensor ${k} is ${v.dtype}, the GPU path reads F32`);
    out[k] = new Float32Array(buffer.slice(8 + n + v.data_offsets[0], 8 + n + v.data_offsets[1]));
  }
  return out;
}

function build(device, plan, weights) {
  const S = GPUBufferUsage;
  const buffers = plan.buffers.map((size) => device.createBuffer({ size, usage: S.STORAGE | S.COPY_SRC | S.COPY_DST }));
  for (const w of plan.weights) {
    if (!weights[w.tensor]) throw new Error(`the record has no tensor ${w.tensor}`);
    device.queue.writeBuffer(buffers[w.buffer], w.offset, weights[w.tensor]);
  }
  for (const c of plan.consts) device.queue.writeBuffer(buffers[c.buffer], c.offset, new Uint32Array(c.words));
  const kernels = plan.kernels.map((k) => {
    const entries = [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: "uniform" } }];
    for (let i = 0; i < k.bindings; i++) {
      entries.push({ binding: i + 1, visibility: GPUShaderStage.COMPUTE,
        buffer: { type: i < k.readonly ? "read-only-storage" : "storage" } });
    }
    const layout = device.createBindGroupLayout({ entries });
    const module = device.createShaderModule({ code: k.wgsl });
    return { layout, pipeline: device.createComputePipeline({
      layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module, entryPoint: "main" } }) };
  });
  const params = device.createBuffer({ size: 256 * plan.dispatches.length, usage: S.UNIFORM | S.COPY_DST });
  const words = new Uint32Array(64 * plan.dispatches.length);
  plan.dispatches.forEach((d, i) => words.set(d.w, 64 * i));
  device.queue.writeBuffer(params, 0, words);
  const groups = plan.dispatches.map((d, i) => device.createBindGroup({
    layout: kernels[d.k].layout,
    entries: [{ binding: 0, resource: { buffer: params, offset: 256 * i, size: 256 } }]
      .concat(d.b.map((b, j) => ({ binding: j + 1, resource: { buffer: buffers[b] } }))),
  }));
  const out = plan.output, nbytes = out.count * 4;
  const staging = device.createBuffer({ size: nbytes, usage: S.MAP_READ | S.COPY_DST });
  let last = Promise.resolve(); // one run at a time: they share the staging buffer
  return {
    run(x) {
      const next = last.then(() => once(x));
      last = next.catch(() => {});
      return next;
    },
  };

  async function once(x) {
    if (x.length !== plan.input.count) throw new Error(`GPU input: expected ${plan.input.count} values, found ${x.length}`);
    device.queue.writeBuffer(buffers[plan.input.buffer], plan.input.offset, x);
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    plan.dispatches.forEach((d, i) => {
      pass.setPipeline(kernels[d.k].pipeline);
      pass.setBindGroup(0, groups[i]);
      pass.dispatchWorkgroups(d.g[0], d.g[1], d.g[2]);
    });
    pass.end();
    enc.copyBufferToBuffer(buffers[out.buffer], out.offset, staging, 0, nbytes);
    device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const y = Array.from(new Float32Array(staging.getMappedRange().slice(0)));
    staging.unmap();
    return y;
  }
}
