"""More activations and their modules: softsign celu selu hardtanh relu6 logsigmoid softmin
normalize, the Tensor.softmax/log_softmax methods (with dtype=), Tensor.type. numpy references in
float64."""
import ember
import ember.nn.functional as nnf
from ember.nn import activation as act

import conformance_kit as kit
from conformance_kit import EXACT, F, V, case as kcase

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF
C = "composite"
ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805


def case(name, *args):
    return kcase("F." + name, *args)


def _f(np, x):
    return np.asarray(x, dtype=np.float64)


def np_softmax(np, x, axis):
    x = _f(np, x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_normalize(np, x, p, axis, eps=1e-12):
    x = _f(np, x)
    if p == INF:
        n = np.abs(x).max(axis=axis, keepdims=True)
    else:
        n = (np.abs(x) ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)
    return x / np.maximum(n, eps)


ACTS = [
    ("softsign", lambda x: nnf.softsign(x), lambda np, x: x / (1.0 + np.abs(x))),
    ("celu", lambda x: nnf.celu(x), lambda np, x: np.where(x > 0, x, np.expm1(x))),
    ("celu.alpha0.5", lambda x: nnf.celu(x, 0.5), lambda np, x: np.where(x > 0, x, 0.5 * np.expm1(x / 0.5))),
    ("selu", lambda x: nnf.selu(x), lambda np, x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(x))),
    ("hardtanh", lambda x: nnf.hardtanh(x), lambda np, x: np.clip(x, -1.0, 1.0)),
    ("hardtanh.-2.3", lambda x: nnf.hardtanh(x, -2.0, 3.0), lambda np, x: np.clip(x, -2.0, 3.0)),
    ("relu6", lambda x: nnf.relu6(x), lambda np, x: np.clip(x, 0.0, 6.0)),
    ("logsigmoid", lambda x: nnf.logsigmoid(x), lambda np, x: -np.logaddexp(0.0, -x)),
]
MODULES = [
    ("Softsign", lambda: act.Softsign(), "softsign"),
    ("CELU", lambda: act.CELU(0.5), "celu.alpha0.5"),
    ("SELU", lambda: act.SELU(), "selu"),
    ("Hardtanh", lambda: act.Hardtanh(-2.0, 3.0), "hardtanh.-2.3"),
    ("ReLU6", lambda: act.ReLU6(), "relu6"),
    ("LogSigmoid", lambda: act.LogSigmoid(), "logsigmoid"),
]


def activation_cases():
    specs = []
    refs = {}
    for name, fn, ref in ACTS:
        refs[name] = ref
        for dt in ("f32", "f64", "f16", "bf16"):
            specs.append(case("%s.%s.2x4" % (name, dt), fn, ref, [F((2, 4), dt, -8.0, 8.0)], dt, C))
        specs.append(case("%s.f32.specials" % name, fn, ref,
                          [V([NAN, INF, -INF, 0.0, -3.0, 3.0, 25.0, -25.0, 100.0, -100.0])], "f32", C))
    for label, make, ref_name in MODULES:
        specs.append(kcase("nn.%s.f32.3x4" % label, lambda x, m=make: m()(x), refs[ref_name], [F((3, 4), "f32", -8.0, 8.0)],
                           "f32", C))
    return specs


def softmax_cases():
    specs = []
    for dt in ("f32", "f64", "f16"):
        specs.append(case("softmin.%s.3x4.dim1" % dt, lambda x: nnf.softmin(x, 1), lambda np, x: np_softmax(np, -x, 1),
                          [F((3, 4), dt)], dt, C))
    specs.append(case("softmin.f32.2x3x2.dim0", lambda x: nnf.softmin(x, 0), lambda np, x: np_softmax(np, -x, 0), [F((2, 3, 2))], "f32", C))
    specs.append(kcase("nn.Softmin.f32.3x4", lambda x: act.Softmin(dim=0)(x), lambda np, x: np_softmax(np, -x, 0), [F((3, 4))], "f32", C))
    specs.append(kcase("Tensor.softmax.f32.3x4", lambda x: x.softmax(-1), lambda np, x: np_softmax(np, x, -1), [F((3, 4))], "f32", C))
    specs.append(kcase("Tensor.log_softmax.f32.3x4.dim0", lambda x: x.log_softmax(0),
                       lambda np, x: np.log(np_softmax(np, x, 0)), [F((3, 4))], "f32", C))
    specs.append(kcase("Tensor.softmax.f16.dtype_f32", lambda x: x.softmax(1, dtype=ember.float32),
                       lambda np, x: np_softmax(np, x, 1), [F((2, 5), "f16")], "f32", C))
    specs.append(kcase("Tensor.log_softmax.f32.dtype_f64", lambda x: x.log_softmax(1, dtype=ember.float64),
                       lambda np, x: np.log(np_softmax(np, x, 1)), [F((2, 5))], "f64", (1e-6, 1e-7)))
    specs.append(case("softmax.f16.dtype_f32", lambda x: nnf.softmax(x, -1, dtype=ember.float32),
                      lambda np, x: np_softmax(np, x, -1), [F((3, 4), "f16")], "f32", C))
    specs.append(case("log_softmax.i64.dtype_f64", lambda x: nnf.log_softmax(x, 1, dtype="float64"),
                      lambda np, x: np.log(np_softmax(np, x, 1)), [kit.I((2, 3), "i64", -3, 4)], "f64", (1e-12, 1e-14)))
    specs.append(kcase("ember.softmax.f32.dim0", lambda x: ember.softmax(x, 0), lambda np, x: np_softmax(np, x, 0), [F((3, 2))], "f32", C))
    return specs


def normalize_cases():
    specs = []
    for label, kw, p, axis in (("p2.dim1", {}, 2.0, 1), ("p1.dim0", {"p": 1, "dim": 0}, 1.0, 0),
                               ("p3.dim-1", {"p": 3, "dim": -1}, 3.0, -1), ("pinf.dim1", {"p": INF}, INF, 1)):
        specs.append(case("normalize.f32.3x4.%s" % label, lambda x, k=kw: nnf.normalize(x, **k),
                          lambda np, x, p=p, a=axis: np_normalize(np, x, p, a), [F((3, 4))], "f32", C))
    specs.append(case("normalize.f32.zero_row", lambda x: nnf.normalize(x), lambda np, x: np_normalize(np, x, 2.0, 1),
                      [V([0.0, 0.0, 0.0, 3.0, 4.0, 0.0], "f32", (2, 3))], "f32", C))
    specs.append(case("normalize.bf16.2x3x2", lambda x: nnf.normalize(x, dim=2), lambda np, x: np_normalize(np, x, 2.0, 2),
                      [F((2, 3, 2), "bf16")], "bf16", C))
    specs.append(case("normalize.f64.eps", lambda x: nnf.normalize(x, eps=10.0), lambda np, x: np_normalize(np, x, 2.0, 1, 10.0),
                      [F((2, 3), "f64")], "f64", C))
    return specs


def type_cases():
    specs = []
    specs.append(kcase("Tensor.type.f32_to_i64", lambda x: x.type(ember.int64), lambda np, x: np.trunc(x), [F((2, 3))], "i64"))
    specs.append(kcase("Tensor.type.name_to_f64", lambda x: x.type("torch.DoubleTensor"), lambda np, x: x, [F((2, 3))], "f64", EXACT))
    specs.append(kcase("Tensor.type.name_to_i32", lambda x: x.type("ember.IntTensor"), lambda np, x: np.trunc(x), [F((3,))], "i32"))
    return specs


SPECS = activation_cases() + softmax_cases() + normalize_cases() + type_cases()
CASES = kit.variants(SPECS)


def test_nn3(device, case):
    kit.run(device, case)
