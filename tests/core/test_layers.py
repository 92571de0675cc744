"""Each layer's output shape and values, on every backend and under MicroPython.

Weights and inputs come from ember's own Generator, so they are the same on every interpreter. The
expected values were computed by torch.nn on CPython from those same weights and inputs (the
twin layers of tests/tools/test_layers_torch.py; positional encodings by their formulas) and
pasted here, rounded to 7 significant digits.
"""
import ember
from ember.nn import activation, attention, conv, dropout, embedding, flatten, linear, norm, pool, positional
from ember.nn import recurrent, transformer
from ember import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from harness.check import assert_close, assert_true, raises

PARAMETERS = ("device", "case")


class Case:
    def __init__(self, name, build, inputs, shape, train=False, bad=()):
        self.name = name
        self.build = build  # (device, generator) -> module
        self.inputs = inputs  # shapes of standard-normal inputs, or functions (device, generator) -> input
        self.shape = shape  # of the first output; its values, flat, are EXPECTED[name]
        self.train = train
        self.bad = bad  # (inputs, error class, text in its message): wrong inputs and their errors


def perturbed(module):
    """Every parameter moved off its initial constant (norm weights of 1, zero biases)."""
    g = ember.Generator(99)
    for _, p in module.named_parameters():
        p.value = p.value + ember.randn(*p.shape, generator=g, device=p.device) * 0.1
    return module


def tokens(device, g):
    return ember.tensor([[1, 4, 2], [0, 6, 2]], device=device)


CASES = [
    Case("Linear", lambda d, g: linear.Linear(3, 2, device=d, generator=g), [(2, 3)], (2, 2),
         bad=(([(2, 4)], ShapeError, "Linear: expected input of shape (..., 3) (in_features), found (2, 4)"),
              ([[1.0, 2.0, 3.0]], ArgumentTypeError, "Linear: expected a Tensor input, found list"))),
    Case("Bilinear", lambda d, g: linear.Bilinear(2, 3, 2, device=d, generator=g), [(2, 2), (2, 3)], (2, 2),
         bad=(([(2, 2), (2, 2)], ShapeError, "in2_features"), ([(2, 2), (3, 3)], ShapeError, "must agree"))),
    Case("Conv1d", lambda d, g: conv.Conv1d(2, 2, 3, padding="same", device=d, generator=g), [(1, 2, 4)], (1, 2, 4),
         bad=(([(1, 3, 4)], ShapeError, "in_channels = 2 at dim 1"), ([(4,)], ShapeError, "(N, C, L) or (C, L)"))),
    Case("Conv2d", lambda d, g: conv.Conv2d(2, 4, 2, stride=(2, 1), groups=2, device=d, generator=g), [(1, 2, 3, 3)],
         (1, 4, 1, 2), bad=(([(1, 2, 1, 1, 1)], ShapeError, "(N, C, H, W) or (C, H, W)"),
                            ([(1, 2, 1, 3)], ShapeError, "smaller than"))),
    Case("ConvTranspose2d", lambda d, g: conv.ConvTranspose2d(1, 2, 2, stride=2, device=d, generator=g),
         [(1, 1, 2, 2)], (1, 2, 4, 4), bad=(([(1, 2, 2, 2)], ShapeError, "in_channels"),)),
    Case("MaxPool1d", lambda d, g: pool.MaxPool1d(2), [(1, 2, 5)], (1, 2, 2),
         bad=(([(1, 2, 2, 2)], ShapeError, "MaxPool1d"),)),
    Case("MaxPool2d", lambda d, g: pool.MaxPool2d(2, stride=1, padding=1), [(1, 1, 3, 3)], (1, 1, 4, 4),
         bad=(([(3,)], ShapeError, "MaxPool2d: expected input of shape (N, C, H, W) or (C, H, W), found (3,)"),)),
    Case("AvgPool1d", lambda d, g: pool.AvgPool1d(3, stride=2, padding=1), [(1, 1, 5)], (1, 1, 3)),
    Case("AvgPool2d", lambda d, g: pool.AvgPool2d(2), [(1, 2, 4, 4)], (1, 2, 2, 2)),
    Case("AdaptiveAvgPool2d", lambda d, g: pool.AdaptiveAvgPool2d((2, 1)), [(1, 2, 3, 3)], (1, 2, 2, 1)),
    Case("BatchNorm1d-train", lambda d, g: perturbed(norm.BatchNorm1d(2, device=d)), [(3, 2)], (3, 2), train=True,
         bad=(([(3, 3)], ShapeError, "num_features = 2 at dim 1"), ([(3,)], ShapeError, "(N, C) or (N, C, L)"))),
    Case("BatchNorm2d-eval", lambda d, g: perturbed(norm.BatchNorm2d(2, device=d)), [(1, 2, 2, 2)], (1, 2, 2, 2),
         bad=(([(2, 2)], ShapeError, "(N, C, H, W)"),)),
    Case("LayerNorm", lambda d, g: perturbed(norm.LayerNorm(4, device=d)), [(2, 4)], (2, 4),
         bad=(([(4, 2)], ShapeError, "LayerNorm: expected input ending in (4,), found shape (4, 2)"),)),
    Case("GroupNorm", lambda d, g: perturbed(norm.GroupNorm(2, 4, device=d)), [(1, 4, 2)], (1, 4, 2),
         bad=(([(1, 2, 4)], ShapeError, "num_channels"),)),
    Case("RMSNorm", lambda d, g: perturbed(norm.RMSNorm(3, device=d)), [(2, 3)], (2, 3),
         bad=(([(3, 2)], ShapeError, "RMSNorm"),)),
    Case("Dropout-eval", lambda d, g: dropout.Dropout(0.5), [(2, 3)], (2, 3)),
    Case("Embedding", lambda d, g: embedding.Embedding(7, 2, padding_idx=2, device=d, generator=g), [tokens],
         (2, 3, 2), bad=(([(2, 3)], DTypeError, "integer index"),)),
    Case("Flatten", lambda d, g: flatten.Flatten(), [(2, 2, 2)], (2, 4)),
    Case("ReLU", lambda d, g: activation.ReLU(), [(2, 3)], (2, 3), bad=(([3.0], ArgumentTypeError, "ReLU"),)),
    Case("GELU", lambda d, g: activation.GELU(), [(2, 3)], (2, 3)),
    Case("GELU-tanh", lambda d, g: activation.GELU("tanh"), [(2, 3)], (2, 3)),
    Case("SiLU", lambda d, g: activation.SiLU(), [(2, 3)], (2, 3)),
    Case("Sigmoid", lambda d, g: activation.Sigmoid(), [(2, 3)], (2, 3)),
    Case("Tanh", lambda d, g: activation.Tanh(), [(2, 3)], (2, 3)),
    Case("LeakyReLU", lambda d, g: activation.LeakyReLU(0.1), [(2, 3)], (2, 3)),
    Case("Softmax", lambda d, g: activation.Softmax(0), [(2, 3)], (2, 3)),
    Case("LogSoftmax", lambda d, g: activation.LogSoftmax(), [(2, 3)], (2, 3)),
    Case("ELU", lambda d, g: activation.ELU(0.5), [(2, 3)], (2, 3)),
    Case("Softplus", lambda d, g: activation.Softplus(2.0, 1.0), [(2, 3)], (2, 3)),
    Case("Mish", lambda d, g: activation.Mish(), [(2, 3)], (2, 3)),
    Case("Hardswish", lambda d, g: activation.Hardswish(), [(2, 3)], (2, 3)),
    Case("Hardsigmoid", lambda d, g: activation.Hardsigmoid(), [(2, 3)], (2, 3)),
    Case("MultiheadAttention", lambda d, g: perturbed(attention.MultiheadAttention(4, 2, device=d, generator=g)),
         [(3, 1, 4), (2, 1, 4), (2, 1, 4)], (3, 1, 4),
         bad=(([(3, 1, 5), (2, 1, 4), (2, 1, 4)], ShapeError, "expected query of shape (L, N, E)"),
              ([(3, 1, 4), (2, 2, 4), (2, 2, 4)], ShapeError, "disagree"))),
    Case("TransformerEncoderLayer", lambda d, g: perturbed(transformer.TransformerEncoderLayer(
        4, 2, 6, dropout=0.0, batch_first=True, device=d, generator=g)), [(1, 3, 4)], (1, 3, 4),
        bad=(([(1, 3, 3)], ShapeError, "E = 4"),)),
    Case("TransformerEncoderLayer-norm-first-gelu", lambda d, g: perturbed(transformer.TransformerEncoderLayer(
        4, 1, 6, dropout=0.0, activation="gelu", norm_first=True, device=d, generator=g)), [(3, 1, 4)], (3, 1, 4)),
    Case("LSTM", lambda d, g: recurrent.LSTM(2, 3, device=d, generator=g), [(3, 1, 2)], (3, 1, 3),
         bad=(([(3, 1, 3)], ShapeError, "(..., 2) (input_size)"), ([(3, 1, 2), (1, 3)], ArgumentError, "pair"))),
    Case("LSTM-2-layers-batch-first", lambda d, g: recurrent.LSTM(2, 2, num_layers=2, batch_first=True, device=d,
                                                                  generator=g), [(1, 3, 2)], (1, 3, 2)),
    Case("GRU", lambda d, g: recurrent.GRU(2, 3, device=d, generator=g), [(3, 1, 2)], (3, 1, 3),
         bad=(([(3, 1, 2), (2, 1, 3)], ShapeError, "initial state of shape (1, 1, 3)"),)),
    Case("PositionalEncoding", lambda d, g: positional.PositionalEncoding(4), [(1, 3, 4)], (1, 3, 4),
         bad=(([(1, 3, 5)], ShapeError, "d_model"),)),
    Case("RotaryEncoding", lambda d, g: positional.RotaryEncoding(4, max_sequence_length=2), [(1, 2, 4)], (1, 2, 4),
         bad=(([(1, 3, 4)], ShapeError, "seq <= 2"),)),
]


def run(case, device):
    g = ember.Generator(5)
    module = case.build(device, g).train(case.train)
    inputs = _inputs(case.inputs, device, g)
    out = module(*inputs)
    return module, inputs, (out[0] if type(out) is tuple else out)


def _inputs(specs, device, g):
    return [s(device, g) if callable(s) else ember.randn(*s, generator=g, device=device) if type(s) is tuple else s
            for s in specs]


def test_output_matches_torch(device, case):
    _, _, out = run(case, device)
    assert_true(out.shape == case.shape, "%s: shape %s != %s" % (case.name, out.shape, case.shape))
    assert_true(out.device == device and out.dtype is ember.float32, "%s: %r %r" % (case.name, out.device, out.dtype))
    assert_close(out.flatten().tolist(), EXPECTED[case.name], rtol=1e-4, atol=1e-5, msg=case.name)


# computed by torch.nn (float64) from the same weights and inputs; see the module docstring
EXPECTED = {
    'Linear': [0.5942157, -0.3758964, -0.2238845, 0.8634797],
    'Bilinear': [2.569116, 1.130571, -0.1407748, -1.68854],
    'Conv1d': [0.5534943, 0.482738, 0.2115466, 0.9338886, -0.01265811, 0.5997939, -0.1231872, -0.423855],
    'Conv2d': [0.9481615, -0.8149968, -0.9176877, 0.7600989, 0.4083478, -0.7883201, 0.04305197, -0.5213493],
    'ConvTranspose2d': [0.02681114, 0.3798047, 0.09016328, 0.3642084, 0.3971342, 0.5574794, 0.377662, 0.5021454,
        0.3553796, 0.298916, 0.5380502, 0.2539452, 0.2961441, 0.2704958, 0.2399977, 0.1109447, -0.06417721,
        -0.6131533, -0.1256724, -0.5518677, -0.4800898, -0.4767388, -0.4485643, -0.4459628, -0.3831147, -0.2953025,
        -0.5604309, -0.1185905, -0.3165869, -0.3171229, -0.2256859, -0.228383],
    'MaxPool1d': [0.1731972, 1.198467, -0.1163931, 0.3533551],
    'MaxPool2d': [-0.1970387, 0.1731972, 1.198467, 1.198467, 0.790768, 2.352469, 2.352469, 1.198467, 0.790768,
        2.352469, 2.352469, 0.3533551, -0.1163931, -0.1163931, 0.3533551, 0.3533551],
    'AvgPool1d': [-0.007947167, 0.7208108, 1.047746],
    'AvgPool2d': [0.395014, 0.2728807, 0.3069861, -0.2523178, -0.355676, -1.082033, 0.1809563, -0.2911457],
    'AdaptiveAvgPool2d': [0.5948819, 0.3083847, -0.2285133, 0.192966],
    'BatchNorm1d-train': [-1.352504, 0.1950379, 0.006209785, 1.406924, 1.129787, -1.61379],
    'BatchNorm2d-eval': [-0.2721446, 0.1036096, 1.144161, 0.730385, 2.915969, -0.9330786, -0.1484111, -0.9737254],
    'LayerNorm': [-1.351836, -0.7453185, 1.160396, 0.5225233, 1.66286, -0.9078778, -0.2671035, -0.7732529],
    'GroupNorm': [-1.351836, -0.6555151, 1.612929, 0.6751703, 1.517026, -0.723949, -0.2574087, -0.7732529],
    'RMSNorm': [-0.2823257, 0.3035011, 1.56988, 0.5362402, 1.950989, -0.4640718],
    'Dropout-eval': [-0.1970387, 0.1731972, 1.198467, 0.790768, 2.352469, -0.7485718],
    'Embedding': [1.198467, 0.790768, 0.3533551, 0.04552482, 0.0, 0.0, -0.1970387, 0.1731972, 0.1374523, 0.6916124,
        0.0, 0.0],
    'Flatten': [-0.1970387, 0.1731972, 1.198467, 0.790768, 2.352469, -0.7485718, -0.1163931, -0.7813195],
    'ReLU': [0.0, 0.1731972, 1.198467, 0.790768, 2.352469, 0.0],
    'GELU': [-0.08313037, 0.09850624, 1.060203, 0.6211168, 2.330534, -0.169969],
    'GELU-tanh': [-0.08313085, 0.09850595, 1.05999, 0.6210357, 2.330905, -0.1700375],
    'SiLU': [-0.08884458, 0.09407925, 0.9207249, 0.5440454, 2.148111, -0.2403908],
    'Sigmoid': [0.4508991, 0.5431914, 0.768252, 0.6879962, 0.9131303, 0.3211326],
    'Tanh': [-0.1945278, 0.171486, 0.8331865, 0.6588439, 0.9820614, -0.6342961],
    'LeakyReLU': [-0.01970387, 0.1731972, 1.198467, 0.790768, 2.352469, -0.07485718],
    'Softmax': [0.2713455, 0.1016274, 0.8751234, 0.7286545, 0.8983726, 0.1248766],
    'LogSoftmax': [-1.869506, -1.49927, -0.4740002, -1.788663, -0.2269612, -3.328002],
    'ELU': [-0.08942059, 0.1731972, 1.198467, 0.790768, 2.352469, -0.2634792],
    'Softplus': [0.2576981, 0.4406343, 1.198467, 0.790768, 2.352469, 0.1009675],
    'Mish': [-0.1057457, 0.1133932, 1.076296, 0.6504688, 2.31723, -0.2762647],
    'Hardswish': [-0.09204866, 0.09159817, 0.8386209, 0.499603, 2.098587, -0.2808926],
    'Hardsigmoid': [0.4671602, 0.5288662, 0.6997445, 0.6317947, 0.8920782, 0.375238],
    'MultiheadAttention': [-0.1290669, -0.1302339, -0.2163386, 0.6007124, -0.112393, -0.1657313, -0.1936978,
        0.6237091, -0.04675899, -0.1358252, -0.2944938, 0.6726304],
    'TransformerEncoderLayer': [0.6503933, 1.156272, -1.351015, -0.7218316, 0.07157865, 1.115968, 0.2515833,
        -1.672909, -1.216876, 1.474048, 0.282482, -0.6840654],
    'TransformerEncoderLayer-norm-first-gelu': [0.9045417, 0.5560004, -1.218923, -0.4675968, 2.315387, 2.581162,
        1.786061, 0.5363473, 0.4911122, 0.8731883, 0.1850365, 0.2325934],
    'LSTM': [0.003754037, 0.2377709, -0.07505816, 0.07616426, 0.2949456, -0.0786492, 0.00889819, 0.320705,
        -0.1707226],
    'LSTM-2-layers-batch-first': [0.1275892, 0.1708173, 0.1859747, 0.2390685, 0.2083771, 0.2539674],
    'GRU': [-0.3488838, -0.1480208, 0.02813031, -0.006445597, -0.1720376, 0.1423459, -0.3269746, -0.2087191,
        0.05156667],
    'PositionalEncoding': [-0.1970387, 1.173197, 1.198467, 1.790768, 3.19394, -0.2082695, -0.1063932, 0.2186305,
        1.262652, -0.370622, -0.839313, 0.332677],
    'RotaryEncoding': [-0.1970387, 0.1731972, 1.198467, 0.790768, 1.900946, 1.57508, -0.1085742, -0.7824443],
}


def test_bad_input_is_a_clear_error(device, case):
    module = case.build(device, ember.Generator(5)).train(case.train)
    for specs, error, text in case.bad:
        inputs = _inputs(specs, device, ember.Generator(6))
        with raises(error, text):
            module(*inputs)
