"""Configs: declared fields with defaults, validation naming the field, JSON round trips, init."""
import os

import ember
from ember.nn import REQUIRED, Config
from ember.nn import activation, attention, conv, dropout, embedding, flatten, linear, norm, pool, positional
from ember.nn import recurrent, transformer
from harness.check import assert_true, raises

PARAMETERS = ("device",)

# (config with some non-default values, the module class it builds)
CONFIGS = [
    (linear.LinearConfig(3, 2, bias=False), linear.Linear),
    (linear.BilinearConfig(2, 3, 4), linear.Bilinear),
    (conv.Conv1dConfig(2, 4, 3, padding="same", dilation=2), conv.Conv1d),
    (conv.Conv2dConfig(2, 4, (3, 1), stride=(2, 1), padding=(1, 0), groups=2), conv.Conv2d),
    (conv.ConvTranspose2dConfig(2, 3, 2, stride=2, output_padding=1), conv.ConvTranspose2d),
    (pool.MaxPool1dConfig(3, stride=1), pool.MaxPool1d),
    (pool.MaxPool2dConfig((2, 2), padding=1, dilation=2), pool.MaxPool2d),
    (pool.AvgPool1dConfig(2), pool.AvgPool1d),
    (pool.AvgPool2dConfig(3, 2, 1), pool.AvgPool2d),
    (pool.AdaptiveAvgPool2dConfig((1, 2)), pool.AdaptiveAvgPool2d),
    (norm.BatchNorm1dConfig(3, momentum=None), norm.BatchNorm1d),
    (norm.BatchNorm2dConfig(3, eps=1e-3, affine=False), norm.BatchNorm2d),
    (norm.LayerNormConfig((2, 3), bias=False), norm.LayerNorm),
    (norm.GroupNormConfig(2, 4), norm.GroupNorm),
    (norm.RMSNormConfig(4, eps=1e-6), norm.RMSNorm),
    (dropout.DropoutConfig(0.25), dropout.Dropout),
    (embedding.EmbeddingConfig(10, 3, padding_idx=0), embedding.Embedding),
    (flatten.FlattenConfig(0, 1), flatten.Flatten),
    (flatten.IdentityConfig(), flatten.Identity),
    (activation.ReLUConfig(), activation.ReLU),
    (activation.GELUConfig("tanh"), activation.GELU),
    (activation.SiLUConfig(), activation.SiLU),
    (activation.SigmoidConfig(), activation.Sigmoid),
    (activation.TanhConfig(), activation.Tanh),
    (activation.LeakyReLUConfig(0.2), activation.LeakyReLU),
    (activation.SoftmaxConfig(0), activation.Softmax),
    (activation.LogSoftmaxConfig(1), activation.LogSoftmax),
    (activation.ELUConfig(0.5), activation.ELU),
    (activation.SoftplusConfig(2.0, 10.0), activation.Softplus),
    (activation.MishConfig(), activation.Mish),
    (activation.HardswishConfig(), activation.Hardswish),
    (activation.HardsigmoidConfig(), activation.Hardsigmoid),
    (attention.MultiheadAttentionConfig(4, 2, batch_first=True), attention.MultiheadAttention),
    (transformer.TransformerEncoderLayerConfig(4, 2, 8, dropout=0.0, activation="gelu", norm_first=True),
     transformer.TransformerEncoderLayer),
    (transformer.TransformerEncoderConfig(4, 2, 2, d_ff=6, final_norm=True), transformer.TransformerEncoder),
    (positional.PositionalEncodingConfig(4, 10), positional.PositionalEncoding),
    (positional.RotaryEncodingConfig(4, 8, theta=500.0), positional.RotaryEncoding),
    (recurrent.LSTMConfig(3, 2, n_layers=2, bidirectional=True), recurrent.LSTM),
    (recurrent.GRUConfig(3, 2, batch_first=True), recurrent.GRU),
]


def test_config_builds_its_layer(device):
    layer = linear.LinearConfig(784, 16, bias=False).init(device)
    assert_true(type(layer) is linear.Linear and layer.weight.shape == (16, 784) and layer.bias is None)
    assert_true(layer.weight.device == device)
    for cfg, cls in CONFIGS:
        m = cfg.init(device, ember.Generator(0))
        assert_true(type(m) is cls, "%r built %s" % (cfg, type(m).__name__))
        assert_true(all(t.device == device for _, t in m.named_tensors()), repr(cfg))


def test_same_generator_same_weights(device):
    a = linear.LinearConfig(3, 2).init(device, ember.Generator(4))
    b = linear.LinearConfig(3, 2).init(device, ember.Generator(4))
    assert_true(a.weight.tolist() == b.weight.tolist())


def test_bad_values_name_the_field(device):
    with raises(ember.ArgumentError, "LinearConfig: d_input must be an int > 0, found -1"):
        linear.LinearConfig(-1, 3)
    with raises(ember.ArgumentError, "LinearConfig: d_output must be an int > 0, found True"):
        linear.LinearConfig(3, True)
    with raises(ember.ArgumentError, "LinearConfig: bias must be True or False, found 1"):
        linear.LinearConfig(3, 2, bias=1)
    with raises(ember.ArgumentError, "DropoutConfig: p must be a probability in [0, 1], found 1.5"):
        dropout.DropoutConfig(1.5)
    with raises(ember.ArgumentError, "GELUConfig: approximate must be one of 'none', 'tanh', found 'fast'"):
        activation.GELUConfig("fast")
    with raises(ember.ArgumentError, "Conv2dConfig: padding must be an int >= 0, a tuple of them, 'valid' or 'same'"):
        conv.Conv2dConfig(1, 1, 3, padding="full")
    with raises(ember.ArgumentError, "Conv2dConfig: kernel_size must be an int > 0 or a tuple of them, found (3, 0)"):
        conv.Conv2dConfig(1, 1, (3, 0))
    with raises(ember.ArgumentError, "divide by groups=2"):
        conv.Conv2dConfig(3, 4, 3, groups=2)
    with raises(ember.ArgumentError, "d_model 6 must divide by n_heads 4"):
        attention.MultiheadAttentionConfig(6, 4)
    with raises(ember.ArgumentError, "BatchNorm2dConfig: momentum must be a probability in [0, 1], found -0.1"):
        norm.BatchNorm2dConfig(2, momentum=-0.1)


def test_field_errors(device):
    with raises(ember.ArgumentError, "LinearConfig: unknown field 'in_features'; fields are d_input, d_output, bias"):
        linear.LinearConfig(3, 2, in_features=3)
    with raises(ember.ArgumentError, "LinearConfig: missing required field 'd_output'"):
        linear.LinearConfig(3)
    with raises(ember.ArgumentError, "LinearConfig: expected at most 3 fields (d_input, d_output, bias), found 4"):
        linear.LinearConfig(3, 2, True, 1)
    with raises(ember.ArgumentError, "LinearConfig: field 'd_input' given twice"):
        linear.LinearConfig(3, 2, d_input=3)
    cfg = linear.LinearConfig(3, 2)
    cfg.d_input = 0  # changed after construction: init checks again
    with raises(ember.ArgumentError, "d_input must be an int > 0, found 0"):
        cfg.init(device)


def test_defaults_and_none(device):
    cfg = pool.MaxPool2dConfig(2)
    assert_true(cfg.stride is None and cfg.padding == 0 and cfg.dilation == 1)
    assert_true(cfg.init().stride == 2)
    assert_true(norm.BatchNorm1dConfig(4, momentum=None).momentum is None)
    assert_true(embedding.EmbeddingConfig(5, 2).padding_idx is None)
    assert_true(linear.LinearConfig(3, 2).values() == [3, 2, True])


def test_json_round_trip(device):
    cfg = linear.LinearConfig(784, 128, bias=False)
    assert_true(cfg.to_json() == '{\n  "d_input": 784,\n  "d_output": 128,\n  "bias": false\n}', cfg.to_json())
    for c, _ in CONFIGS:
        back = type(c).from_json(c.to_json())
        assert_true(back == c and back is not c, "%r -> %r" % (c, back))
    assert_true(activation.ReLUConfig().to_json() == "{}")
    assert_true(conv.Conv2dConfig.from_json(CONFIGS[3][0].to_json()).kernel_size == (3, 1))  # lists become tuples


def test_json_errors(device):
    with raises(ember.ArgumentError, "LinearConfig.from_json: invalid JSON"):
        linear.LinearConfig.from_json('{"d_input": 3,')
    with raises(ember.ArgumentError, "LinearConfig.from_json: expected a JSON object, found list"):
        linear.LinearConfig.from_json("[3, 2]")
    with raises(ember.ArgumentError, "LinearConfig: unknown field 'd_inputs'"):
        linear.LinearConfig.from_json('{"d_inputs": 3, "d_output": 2}')
    with raises(ember.ArgumentError, "LinearConfig: d_input must be an int > 0, found 2.5"):
        linear.LinearConfig.from_json('{"d_input": 2.5, "d_output": 2}')


def test_save_and_load_a_file(device):
    try:
        import tempfile
        path = tempfile.mkdtemp() + "/encoder.json"
    except ImportError:  # MicroPython: relative to the runner's cwd, a folder it discards after the run
        path = "encoder_config.json"
    cfg = transformer.TransformerEncoderConfig(8, 2, 3, d_ff=16, norm_first=True)
    cfg.save(path)
    assert_true(transformer.TransformerEncoderConfig.load(path) == cfg)
    os.remove(path)


def test_replace_and_repr(device):
    cfg = linear.LinearConfig(3, 2)
    wider = cfg.replace(d_output=5)
    assert_true(wider.d_output == 5 and cfg.d_output == 2)
    assert_true(repr(wider) == "LinearConfig(d_input=3, d_output=5, bias=True)")
    with raises(ember.ArgumentError, "unknown field 'width'"):
        cfg.replace(width=3)
    assert_true(cfg != wider and cfg == linear.LinearConfig(3, 2))


def test_a_user_config(device):
    class MlpConfig(Config):
        FIELDS = (("d_input", REQUIRED, "int>0"), ("d_hidden", 16, "int>0"), ("activation", "relu", ("relu", "gelu")))

        def build(self, device, generator):
            from ember.nn import Sequential
            return Sequential(linear.Linear(self.d_input, self.d_hidden, device=device, generator=generator),
                              activation.GELU() if self.activation == "gelu" else activation.ReLU())

    model = MlpConfig(4, activation="gelu").init(device)
    assert_true(model.num_params() == 4 * 16 + 16 and type(model[1]) is activation.GELU)
    assert_true(MlpConfig.from_json(MlpConfig(4).to_json()) == MlpConfig(4, 16, "relu"))
