"""The input gradient of max and avg pooling as one WGSL kernel: Wgpu's replacement for the
composite ``pool_input_grad`` (accel/autodiff/rules.py), which gathers windows, takes argmax and
scatter-adds.

One thread per input element walks the windows that hold it in window order (the order the
composite's scatter_add adds in; where the windows tile the input, it finds its one window by a
division) and sums, in f64 where the adapter has it: for max the gradient of each window whose
first max (argmax's pick: the first nan, else the first of equal values; pads are -inf) is this
element, for avg each window's equal share. float32 and float64; other dtypes run the
composite.
"""
import ember
from ember import dtypes
from ember.composite import COMPOSITES, register_fused

from . import codegen, ops
from .arrays import numel
from .device import Wgpu
from .linalg import _dispatch, _out_size, _spatial, _strides4

# input (iy, ix) of image nb, channel c, and where that image's x and g start
_INPUT = """  let W = pi(4u); let H = pi(3u); let C = pw(2u);
  let OH = pi(6u); let OW = pi(7u); let KH = pi(8u); let KW = pi(9u);
  let sh = pi(12u); let sw = pi(13u); let dh = pi(14u); let dw = pi(15u); let pt = pi(16u); let pl = pi(17u);
  let ix = i32(i %% u32(W)); let r1 = i / u32(W); let iy = i32(r1 %% u32(H)); let r2 = r1 / u32(H);
  let c = r2 %% C; let nb = r2 / C;
  let xb = pi(22u) + i32(nb) * pi(18u) + i32(c) * pi(19u);
  let gb = pi(27u) + i32(nb) * pi(23u) + i32(c) * pi(24u);
  var acc = %(act)s(0);
"""

# the window (oy, ox) holding input (iy, ix) at kernel offset (ky, kx), in window order
_WINDOWS = _INPUT + """  for (var ky = KH - 1; ky >= 0; ky = ky - 1) {
    let ty = iy + pt - ky * dh;
    if (ty < 0 || ty %% sh != 0 || ty / sh >= OH) { continue; }
    let oy = ty / sh;
    for (var kx = KW - 1; kx >= 0; kx = kx - 1) {
      let tx = ix + pl - kx * dw;
      if (tx < 0 || tx %% sw != 0 || tx / sw >= OW) { continue; }
      let ox = tx / sw;
      let gv = %(gload)s;
%(window)s
    }
  }
  b2[u32(pi(28u)) + i] = %(store)s;
"""

_MAX = """      var best = %(ninf)s;
      var at = -1;
      var started = false;
      for (var wy = 0; wy < KH; wy = wy + 1) {
        let y = oy * sh + wy * dh - pt;
        for (var wx = 0; wx < KW; wx = wx + 1) {
          let x = ox * sw + wx * dw - pl;
          let inside = y >= 0 && y < H && x >= 0 && x < W;
          var v = %(ninf)s;
          if (inside) { v = %(xload)s; }
          let pos = select(-1, y * W + x, inside);
          if (!started) { best = v; at = pos; started = true; }
          else if (!%(isnan)s(best) && (%(isnan)s(v) || v > best)) { best = v; at = pos; }
        }
      }
      if (at == iy * W + ix) { acc = acc + %(act)s(gv); }"""

_AVG = """      acc = acc + %(act)s(%(share)s);"""

# windows that tile the input (stride = kernel, no dilation, no padding: max_pool2d(x, 2)): each
# input lies in at most one window, found by a division, with none of the generic loop's tests
_TILED = _INPUT + """  let oy = iy / KH; let ox = ix / KW;
  if (oy < OH && ox < OW) {
    let gv = %(gload)s;
%(window)s
  }
  b2[u32(pi(28u)) + i] = %(store)s;
"""


def pool_input_grad(self, op, x, g, kernel, stride, padding, dilation):
    """The gradient for ``x`` of ``pool(op, x, ...)`` from the output's ``g`` (a Wgpu array)."""
    dtype = x.dtype
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = _spatial(x.shape, kernel, stride, padding, dilation)
    pads = ((0, 0),) + tuple(padding) if len(x.shape) == 3 else tuple(padding)
    OH = _out_size(H, KH, sh, pads[0], dh)
    OW = _out_size(W, KW, sw, pads[1], dw)
    N, C = x.shape[0], x.shape[1]
    out = self._alloc(x.shape, dtype)
    total = numel(x.shape)
    if total == 0:
        return out
    st = self.storage[dtype].wgsl
    act = "f64" if self.rt.has_f64 else "f32"
    words = [total, N, C, H, W, C, OH, OW, KH, KW, 0, 0, sh, sw, dh, dw, pt, pl]
    words += list(_strides4(x)) + [self._base(x)] + list(_strides4(g)) + [self._base(g), self._base(out)]
    gload = ops.load(st, st).format("b1[u32(gb + oy * pi(25u) + ox * pi(26u))]")
    if op == "max":
        libs = ["bits64" if st == "f64" else "bits32"]
        window = _MAX % {"ninf": "-inf64()" if st == "f64" else "ninf32()",
                         "isnan": "isnan64" if st == "f64" else "isnan32", "act": act,
                         "xload": "b0[u32(xb + y * pi(20u) + x * pi(21u))]"}
    else:
        libs = []
        # the composite's share: g / (KH * KW) rounded to the dtype (division in f64 where there is one)
        share = "%s(%s(gv) / %s(KH * KW))" % (st, act, act)
        window = _AVG % {"act": act, "share": share}
    store, slibs = ops.store(act, dtype, st)
    tiled = (sh, sw, dh, dw) == (KH, KW, 1, 1) and not any(any(p) for p in pads)
    body = (_TILED if tiled else _WINDOWS) % {"act": act, "gload": gload, "window": window, "store": store.format("acc")}
    build = lambda: codegen.strided_source([st, st, st], 0, body, libs + list(slibs), False)  # noqa: E731
    _dispatch(self, ("pool_grad", op, dtype.name, act) + (("tiled",) if tiled else ()), build,
              [x.block.buffer, g.block.buffer, out.block.buffer], words, total)
    return out


def _pool_input_grad(g, x, op, kernel, stride, padding, dilation):
    dt = x.dtype
    if (type(x.device) is Wgpu and g.device == x.device and g.dtype is dt
            and (dt is dtypes.float32 or (dt is dtypes.float64 and x.device.rt.has_f64))):
        data = pool_input_grad(x.device, op, x._data, g._data, kernel, stride, padding, dilation)
        return ember.Tensor(data, x.shape, dt, x.device)
    return COMPOSITES["pool_input_grad"](g, x, op, kernel, stride, padding, dilation)


register_fused(Wgpu, {"pool_input_grad": _pool_input_grad})
