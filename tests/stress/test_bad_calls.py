"""The bad-input table: hundreds of distinct bad calls across ember's public API, run on every
backend. Each must raise an ``EmberError`` subclass (never a plain Python error, never a result)
whose message starts with the op the user called and says what was expected and what was found."""
import ember
import ember.nn.functional as F
import ember.nn.layers as nn
from ember import (ArgumentError, ArgumentTypeError, DTypeError, EmberError, IndexOutOfRange, ShapeError)

from probes import tally

PARAMETERS = ("device",)

# the name a message may use for a method that runs an op of another name
ALIASES = {"floor_divide": "floordiv", "remainder": "mod", "bitwise_and": "and", "bitwise_or": "or",
           "bitwise_xor": "xor", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
           "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__matmul__": "matmul",
           "__pow__": "pow", "__getitem__": "index", "__setitem__": "index", "clip": "clamp", "view": "reshape",
           "swap_dims": "transpose", "std": "var", "argsort": "sort", "int": "item"}

BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder", "atan2", "eq",
          "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "__add__", "__sub__", "__mul__",
          "__truediv__", "__pow__")
INT_BINARY = ("bitwise_and", "bitwise_or", "bitwise_xor")
DIM_OPS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "any", "all")
SCAN_OPS = ("cumsum", "cumprod", "cummax", "cummin")
FLOAT_ONLY_UNARY = ()


def _calls():
    """[(label, op, fn(device))]: every bad call of the table."""
    rows = []

    def add(label, op, fn):
        rows.append((label, op, fn))

    def x(d, *shape):
        return ember.ones(*(shape or (2, 3)), device=d)

    def ix(d, values):
        return ember.tensor(values, dtype=ember.int64, device=d)

    # binary ops: shapes that do not broadcast, operands that are not numbers
    for op in BINARY + INT_BINARY:
        dt = ember.int64 if op in INT_BINARY else ember.float32
        add(op + "/shape", op, lambda d, op=op, dt=dt: getattr(ember.ones(2, 3, dtype=dt, device=d), op)(
            ember.ones(4, dtype=dt, device=d)))
        add(op + "/shape3", op, lambda d, op=op, dt=dt: getattr(ember.ones(2, 3, 4, dtype=dt, device=d), op)(
            ember.ones(3, 3, dtype=dt, device=d)))
        add(op + "/str", op, lambda d, op=op, dt=dt: getattr(ember.ones(2, dtype=dt, device=d), op)("2"))
        add(op + "/list", op, lambda d, op=op, dt=dt: getattr(ember.ones(2, dtype=dt, device=d), op)([1, 2]))
    for op in INT_BINARY:
        add(op + "/float", op, lambda d, op=op: getattr(x(d), op)(x(d)))
    add("bitwise_not/float", "bitwise_not", lambda d: x(d).bitwise_not())
    # reductions and scans: dims out of range, of the wrong type, repeated
    for op in DIM_OPS + SCAN_OPS + ("softmax", "log_softmax", "sort", "argsort"):
        target = ("F." + op) if op in ("softmax", "log_softmax") else op

        def call(d, arg, op=op):
            t = x(d)
            return getattr(F, op)(t, arg) if op in ("softmax", "log_softmax") else getattr(t, op)(arg)
        add(op + "/dim5", target[2:] if target.startswith("F.") else op, lambda d, call=call: call(d, 5))
        add(op + "/dim-3", target[2:] if target.startswith("F.") else op, lambda d, call=call: call(d, -3))
        add(op + "/dimstr", target[2:] if target.startswith("F.") else op, lambda d, call=call: call(d, "1"))
    for op in DIM_OPS[:8]:
        add(op + "/dims-repeat", op, lambda d, op=op: getattr(x(d), op)((0, 0)))
        add(op + "/dims-out", op, lambda d, op=op: getattr(x(d), op)((0, 4)))
    add("topk/k", "topk", lambda d: x(d).topk(9))
    add("topk/k-neg", "topk", lambda d: x(d).topk(-1))
    add("topk/dim", "topk", lambda d: x(d).topk(1, 4))
    # movement
    add("reshape/count", "reshape", lambda d: x(d).reshape(4, 4))
    add("reshape/two-infer", "reshape", lambda d: x(d).reshape(-1, -1))
    add("reshape/neg", "reshape", lambda d: x(d).reshape(-2, 3))
    add("reshape/float", "reshape", lambda d: x(d).reshape(2.0, 3))
    add("view/count", "reshape", lambda d: x(d).view(7))
    add("permute/short", "permute", lambda d: x(d).permute(0))
    add("permute/repeat", "permute", lambda d: x(d).permute(0, 0))
    add("permute/out", "permute", lambda d: x(d).permute(0, 2))
    add("transpose/out", "transpose", lambda d: x(d).transpose(0, 5))
    add("expand/size", "expand", lambda d: x(d).expand(3, 3))
    add("expand/rank", "expand", lambda d: x(d).expand(3))
    add("expand/neg", "expand", lambda d: x(d).expand(-2, 3))
    add("flatten/out", "flatten", lambda d: x(d).flatten(5))
    add("flatten/order", "flatten", lambda d: x(d, 2, 3, 4).flatten(2, 1))
    add("squeeze/out", "squeeze", lambda d: x(d).squeeze(7))
    add("unsqueeze/out", "unsqueeze", lambda d: x(d).unsqueeze(9))
    add("narrow/length", "narrow", lambda d: x(d).narrow(0, 1, 5))
    add("narrow/dim", "narrow", lambda d: x(d).narrow(5, 0, 1))
    add("narrow/start", "narrow", lambda d: x(d).narrow(1, 7, 1))
    add("flip/dim", "flip", lambda d: x(d).flip(7))
    add("roll/dim", "roll", lambda d: x(d).roll(1, 9))
    add("repeat/short", "repeat", lambda d: x(d).repeat(2))
    add("repeat/neg", "repeat", lambda d: x(d).repeat(2, -1))
    add("split/zero", "split", lambda d: x(d).split(0))
    add("split/sizes", "split", lambda d: x(d).split([1, 5], 1))
    add("chunk/zero", "chunk", lambda d: x(d).chunk(0))
    add("tril/1d", "tril", lambda d: x(d, 3).tril())
    add("triu/1d", "triu", lambda d: x(d, 3).triu())
    add("cat/shapes", "cat", lambda d: ember.cat([x(d), x(d, 2, 4)]))
    add("cat/empty", "cat", lambda d: ember.cat([]))
    add("cat/dim", "cat", lambda d: ember.cat([x(d), x(d)], 4))
    add("cat/rank", "cat", lambda d: ember.cat([x(d), x(d, 3)]))
    add("cat/type", "cat", lambda d: ember.cat([x(d), [1.0, 2.0, 3.0]]))
    add("stack/shapes", "stack", lambda d: ember.stack([x(d), x(d, 3, 2)]))
    add("stack/empty", "stack", lambda d: ember.stack([]))
    add("stack/dim", "stack", lambda d: ember.stack([x(d), x(d)], 5))
    # indexing
    add("index/int", "index", lambda d: x(d)[5])
    add("index/neg", "index", lambda d: x(d)[-3])
    add("index/too-many", "index", lambda d: x(d)[0, 0, 0])
    add("index/str", "index", lambda d: x(d)["a"])
    add("index/float", "index", lambda d: x(d)[1.5])
    add("index/tensor-range", "index", lambda d: x(d)[ix(d, [5])])
    add("index/float-tensor", "index", lambda d: x(d)[x(d, 2)])
    add("index/step0", "index", lambda d: x(d)[::0])
    add("setitem/shape", "setitem", lambda d: x(d).__setitem__(0, x(d, 4)))
    add("setitem/out", "index", lambda d: x(d).__setitem__(7, 1.0))
    add("setitem/str", "setitem", lambda d: x(d).__setitem__(0, "a"))
    add("gather/rank", "gather", lambda d: x(d).gather(0, ix(d, [0])))
    add("gather/float", "gather", lambda d: x(d).gather(0, x(d)))
    add("gather/range", "gather", lambda d: x(d).gather(0, ix(d, [[0, 1, 5]])))
    add("gather/dim", "gather", lambda d: x(d).gather(3, ix(d, [[0]])))
    add("gather/type", "gather", lambda d: x(d).gather(0, [[0]]))
    add("scatter/rank", "scatter", lambda d: x(d).scatter(0, ix(d, [0]), x(d, 1)))
    add("scatter/range", "scatter", lambda d: x(d).scatter(0, ix(d, [[7, 0, 0]]), x(d, 1, 3)))
    add("scatter/reduce", "scatter", lambda d: x(d).scatter(0, ix(d, [[0, 0, 0]]), x(d, 1, 3), reduce="max"))
    add("scatter_add/rank", "scatter", lambda d: x(d).scatter_add(0, ix(d, [0]), x(d, 1)))
    add("index_select/2d", "index_select", lambda d: x(d).index_select(0, ix(d, [[0]])))
    add("index_select/range", "index_select", lambda d: x(d).index_select(1, ix(d, [0, 3])))
    add("index_select/float", "index_select", lambda d: x(d).index_select(0, x(d, 2)))
    add("index_select/dim", "index_select", lambda d: x(d).index_select(2, ix(d, [0])))
    add("take/range", "take", lambda d: x(d).take(ix(d, [6])))
    add("take/neg-range", "take", lambda d: x(d).take(ix(d, [-7])))
    add("take/float", "take", lambda d: x(d).take(x(d, 2)))
    add("masked_fill/mask", "masked_fill", lambda d: x(d).masked_fill(x(d), 0.0))
    add("masked_fill/shape", "masked_fill", lambda d: x(d).masked_fill(ember.ones(4, dtype=ember.bool, device=d), 0.0))
    add("masked_select/mask", "masked_select", lambda d: x(d).masked_select(x(d)))
    add("where/shape", "where", lambda d: ember.where(ember.ones(4, dtype=ember.bool, device=d), x(d), x(d)))
    add("clamp/none", "clamp", lambda d: x(d).clamp())
    add("clamp/shape", "clamp", lambda d: x(d).clamp(x(d, 4)))
    add("clamp/str", "clamp", lambda d: x(d).clamp("0"))
    add("clip/shape", "clamp", lambda d: x(d).clip(max=x(d, 5)))
    add("matmul/inner", "matmul", lambda d: x(d) @ x(d))
    add("matmul/0d", "matmul", lambda d: x(d) @ ember.tensor(1.0, device=d))
    add("matmul/batch", "matmul", lambda d: x(d, 2, 2, 3) @ x(d, 3, 3, 4))
    add("matmul/type", "matmul", lambda d: x(d).matmul([1.0, 2.0, 3.0]))
    add("matmul/vec", "matmul", lambda d: x(d, 3) @ x(d, 4))
    # conversions
    add("item/many", "item", lambda d: x(d).item())
    add("bool/many", "bool", lambda d: bool(x(d)))
    add("len/0d", "len", lambda d: len(ember.tensor(1.0, device=d)))
    add("iter/0d", "iter", lambda d: list(ember.tensor(1.0, device=d)))
    add("to/str", "to", lambda d: x(d).to("tpu"))  # "cuda" names the Wgpu device where there is one
    add("to/int", "to", lambda d: x(d).to(3))
    add("int/many", "int", lambda d: int(x(d)))
    # creation
    for op in ("zeros", "ones", "empty", "rand", "randn"):
        add(op + "/neg", op, lambda d, op=op: getattr(ember, op)(-1, device=d))
        add(op + "/float", op, lambda d, op=op: getattr(ember, op)(2.5, device=d))
        add(op + "/str", op, lambda d, op=op: getattr(ember, op)("3", device=d))
        add(op + "/dtype", op, lambda d, op=op: getattr(ember, op)(2, dtype="complex64", device=d))
        add(op + "/nested", op, lambda d, op=op: getattr(ember, op)((2, (3,)), device=d))
    add("full/value", "full", lambda d: ember.full((2,), "x", device=d))
    add("full/shape", "full", lambda d: ember.full(-2, 1.0, device=d))
    add("full_like/type", "full_like", lambda d: ember.full_like([1.0], 1.0, device=d))
    add("zeros_like/type", "zeros_like", lambda d: ember.zeros_like([1.0]))
    add("arange/step0", "arange", lambda d: ember.arange(0, 10, 0, device=d))
    add("arange/str", "arange", lambda d: ember.arange("10", device=d))
    add("arange/nan", "arange", lambda d: ember.arange(0, float("nan"), device=d))
    add("linspace/neg", "linspace", lambda d: ember.linspace(0, 1, -1, device=d))
    add("linspace/float", "linspace", lambda d: ember.linspace(0, 1, 2.5, device=d))
    add("eye/neg", "eye", lambda d: ember.eye(-1, device=d))
    add("eye/float", "eye", lambda d: ember.eye(2.5, device=d))
    add("randint/range", "randint", lambda d: ember.randint(5, 2, (3,), device=d))
    add("randint/float", "randint", lambda d: ember.randint(0, 2.5, (3,), device=d))
    add("tensor/ragged", "tensor", lambda d: ember.tensor([[1, 2], [3]], device=d))
    add("tensor/str", "tensor", lambda d: ember.tensor("abc", device=d))
    add("tensor/none", "tensor", lambda d: ember.tensor([1, None], device=d))
    add("tensor/dtype", "tensor", lambda d: ember.tensor([1.0], dtype="f32", device=d))
    add("tensor/float-int", "tensor", lambda d: ember.tensor([1.5], dtype=ember.int32, device=d).tolist() and
        ember.tensor([[1.0], 2.0], device=d))
    # nn.functional
    img = lambda d, *s: ember.ones(*(s or (1, 1, 5, 5)), device=d)  # noqa: E731
    add("linear/none", "linear", lambda d: F.linear(x(d), None))
    add("linear/shape", "matmul", lambda d: F.linear(x(d), x(d, 4, 4)))
    add("linear/bias", "linear", lambda d: F.linear(x(d), x(d, 4, 3), x(d, 5)))
    add("linear/weight3d", "linear", lambda d: F.linear(x(d), x(d, 1, 4, 3)))
    for op, n in (("conv1d", 1), ("conv2d", 2)):
        inp = (lambda d, n=n: img(d, 1, 1, 5) if n == 1 else img(d))
        k = (lambda d, n=n, *s: img(d, *((2, 1, 3) if n == 1 else (2, 1, 3, 3))))
        fn = getattr(F, op)
        add(op + "/rank", op, lambda d, fn=fn, k=k: fn(x(d), k(d)))
        add(op + "/wrank", op, lambda d, fn=fn, inp=inp: fn(inp(d), x(d)))
        add(op + "/channels", op, lambda d, fn=fn, inp=inp, n=n: fn(inp(d), img(d, *((2, 2, 3) if n == 1 else (2, 2, 3, 3)))))
        add(op + "/stride0", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), stride=0))
        add(op + "/dil0", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), dilation=0))
        add(op + "/pad-neg", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), padding=-1))
        add(op + "/pad-str", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), padding="full"))
        add(op + "/same-stride", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), stride=2, padding="same"))
        add(op + "/groups", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), groups=2))
        add(op + "/groups0", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), groups=0))
        add(op + "/bias", op, lambda d, fn=fn, inp=inp, k=k: fn(inp(d), k(d), x(d, 3)))
        add(op + "/kernel0", op, lambda d, fn=fn, inp=inp, n=n: fn(inp(d), img(d, *((2, 1, 0) if n == 1 else (2, 1, 0, 0)))))
        add(op + "/small", op, lambda d, fn=fn, n=n: fn(img(d, *((1, 1, 2) if n == 1 else (1, 1, 2, 2))),
                                                      img(d, *((2, 1, 3) if n == 1 else (2, 1, 3, 3)))))
        add(op + "/type", op, lambda d, fn=fn, k=k: fn([1.0], k(d)))
    add("conv_transpose2d/rank", "conv_transpose2d", lambda d: F.conv_transpose2d(x(d), img(d)))
    add("conv_transpose2d/channels", "conv_transpose2d", lambda d: F.conv_transpose2d(img(d), img(d, 2, 1, 3, 3)))
    add("conv_transpose2d/outpad", "conv_transpose2d",
        lambda d: F.conv_transpose2d(img(d), img(d, 1, 1, 3, 3), stride=2, output_padding=2))
    add("conv_transpose2d/kernel0", "conv_transpose2d", lambda d: F.conv_transpose2d(img(d), img(d, 1, 1, 0, 3)))
    for op in ("max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d"):
        fn = getattr(F, op)
        inp = (lambda d, op=op: img(d, 1, 1, 5) if op.endswith("1d") else img(d))
        add(op + "/rank", op, lambda d, fn=fn: fn(x(d, 5), 2))
        add(op + "/kernel0", op, lambda d, fn=fn, inp=inp: fn(inp(d), 0))
        add(op + "/stride0", op, lambda d, fn=fn, inp=inp: fn(inp(d), 2, 0))
        add(op + "/pad", op, lambda d, fn=fn, inp=inp: fn(inp(d), 2, 1, 2))
        add(op + "/big", op, lambda d, fn=fn, inp=inp: fn(inp(d), 9))
        if op.startswith("avg"):  # max pools take integers, as PyTorch's do; a mean of ints is refused
            add(op + "/int", op, lambda d, fn=fn, op=op: fn(ember.ones(*((1, 1, 5) if op.endswith("1d") else (1, 1, 5, 5)),
                                                                      dtype=ember.int64, device=d), 2))
        add(op + "/type", op, lambda d, fn=fn: fn("x", 2))
    add("adaptive_avg_pool2d/rank", "adaptive_avg_pool2d", lambda d: F.adaptive_avg_pool2d(x(d), 1))
    add("adaptive_avg_pool2d/size", "adaptive_avg_pool2d", lambda d: F.adaptive_avg_pool2d(img(d), 0))
    add("dropout/p", "dropout", lambda d: F.dropout(x(d), 1.5))
    add("dropout/neg", "dropout", lambda d: F.dropout(x(d), -0.1))
    add("leaky_relu/type", "leaky_relu", lambda d: F.leaky_relu(x(d), "0.1"))
    add("one_hot/float", "one_hot", lambda d: F.one_hot(x(d)))
    add("one_hot/range", "one_hot", lambda d: F.one_hot(ix(d, [0, 5]), 3))
    add("one_hot/neg", "one_hot", lambda d: F.one_hot(ix(d, [-1]), 3))
    add("embedding/range", "embedding", lambda d: F.embedding(ix(d, [9]), x(d, 3, 2)))
    add("embedding/weight", "embedding", lambda d: F.embedding(ix(d, [0]), x(d, 3)))
    add("embedding/float", "embedding", lambda d: F.embedding(x(d, 2), x(d, 3, 2)))
    add("layer_norm/shape", "layer_norm", lambda d: F.layer_norm(x(d), (4,)))
    add("layer_norm/long", "layer_norm", lambda d: F.layer_norm(x(d), (1, 2, 3)))
    add("group_norm/groups", "group_norm", lambda d: F.group_norm(img(d, 2, 3, 2, 2), 2))
    add("batch_norm/rank", "batch_norm", lambda d: F.batch_norm(x(d, 3), None, None, training=True))
    add("batch_norm/running", "batch_norm", lambda d: F.batch_norm(x(d, 4, 3), x(d, 2), x(d, 2)))
    add("batch_norm/weight", "batch_norm", lambda d: F.batch_norm(x(d, 4, 3), None, None, x(d, 5), training=True))
    add("batch_norm/eval", "batch_norm", lambda d: F.batch_norm(x(d, 4, 3), None, None))
    add("batch_norm/one", "batch_norm", lambda d: F.batch_norm(x(d, 1, 3), None, None, training=True))
    add("pad/odd", "pad", lambda d: F.pad(x(d), (1,)))
    add("pad/long", "pad", lambda d: F.pad(x(d), (1, 1, 1, 1, 1, 1)))
    add("pad/mode", "pad", lambda d: F.pad(x(d), (1, 1), mode="wrap"))
    add("interpolate/rank", "interpolate", lambda d: F.interpolate(x(d), scale_factor=2))
    add("interpolate/mode", "interpolate", lambda d: F.interpolate(img(d), scale_factor=2, mode="cubic"))
    add("interpolate/none", "interpolate", lambda d: F.interpolate(img(d)))
    add("sdpa/shape", "scaled_dot_product_attention",
        lambda d: F.scaled_dot_product_attention(x(d, 1, 2, 4), x(d, 1, 3, 5), x(d, 1, 3, 4)))
    add("sdpa/mask", "scaled_dot_product_attention",
        lambda d: F.scaled_dot_product_attention(x(d, 1, 2, 4), x(d, 1, 3, 4), x(d, 1, 3, 4), attn_mask=x(d, 5, 5)))
    logits, target = (lambda d: x(d, 4, 3)), (lambda d: ix(d, [0, 1, 2, 0]))
    add("cross_entropy/range", "cross_entropy", lambda d: F.cross_entropy(logits(d), ix(d, [0, 1, 2, 3])))
    add("cross_entropy/neg", "cross_entropy", lambda d: F.cross_entropy(logits(d), ix(d, [0, 1, 2, -5])))
    add("cross_entropy/shape", "cross_entropy", lambda d: F.cross_entropy(logits(d), ix(d, [0, 1])))
    add("cross_entropy/reduction", "cross_entropy", lambda d: F.cross_entropy(logits(d), target(d), reduction="avg"))
    add("cross_entropy/smoothing", "cross_entropy", lambda d: F.cross_entropy(logits(d), target(d), label_smoothing=2.0))
    add("cross_entropy/weight", "cross_entropy", lambda d: F.cross_entropy(logits(d), target(d), weight=x(d, 5)))
    add("cross_entropy/type", "cross_entropy", lambda d: F.cross_entropy(logits(d), [0, 1, 2, 0]))
    add("nll_loss/range", "nll_loss", lambda d: F.nll_loss(logits(d), ix(d, [0, 1, 2, 7])))
    add("nll_loss/shape", "nll_loss", lambda d: F.nll_loss(logits(d), ix(d, [[0, 1, 2, 0]])))
    add("nll_loss/reduction", "nll_loss", lambda d: F.nll_loss(logits(d), target(d), reduction="x"))
    for op in ("mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
               "binary_cross_entropy_with_logits", "kl_div"):
        fn = getattr(F, op)
        add(op + "/shape", op, lambda d, fn=fn: fn(x(d) * 0.5, x(d, 3, 2) * 0.5))
        add(op + "/reduction", op, lambda d, fn=fn: fn(x(d) * 0.5, x(d) * 0.5, reduction="avg"))
        add(op + "/type", op, lambda d, fn=fn: fn(x(d) * 0.5, [0.5]))
    add("huber_loss/delta", "huber_loss", lambda d: F.huber_loss(x(d), x(d), delta=0.0))
    add("smooth_l1_loss/beta", "smooth_l1_loss", lambda d: F.smooth_l1_loss(x(d), x(d), beta=-1.0))
    # layers: settings at construction, inputs at the call
    layer_bad = [
        ("Linear/neg", "Linear", lambda d: nn.Linear(-1, 3, device=d)),
        ("Linear/float", "Linear", lambda d: nn.Linear(2.5, 3, device=d)),
        ("Linear/out", "Linear", lambda d: nn.Linear(3, -2, device=d)),
        ("Linear/input", "Linear", lambda d: nn.Linear(3, 2, device=d)(x(d, 2, 4))),
        ("Linear/type", "Linear", lambda d: nn.Linear(3, 2, device=d)([1.0, 2.0, 3.0])),
        ("Bilinear/zero", "Bilinear", lambda d: nn.Bilinear(0, 2, 3, device=d)),
        ("Embedding/neg", "Embedding", lambda d: nn.Embedding(-1, 3, device=d)),
        ("Embedding/dim", "Embedding", lambda d: nn.Embedding(3, -3, device=d)),
        ("Embedding/pad", "Embedding", lambda d: nn.Embedding(3, 2, padding_idx=5, device=d)),
        ("Embedding/float", "Embedding", lambda d: nn.Embedding(3, 2, device=d)(x(d, 2))),
        ("Embedding/range", "embedding", lambda d: nn.Embedding(3, 2, device=d)(ix(d, [3]))),
        ("Conv2d/k0", "Conv2d", lambda d: nn.Conv2d(1, 2, 0, device=d)),
        ("Conv2d/stride0", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, stride=0, device=d)),
        ("Conv2d/dil0", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, dilation=0, device=d)),
        ("Conv2d/pad", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, padding=-1, device=d)),
        ("Conv2d/pad-str", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, padding="full", device=d)),
        ("Conv2d/in0", "Conv2d", lambda d: nn.Conv2d(0, 2, 3, device=d)),
        ("Conv2d/groups", "Conv2d", lambda d: nn.Conv2d(3, 2, 3, groups=2, device=d)),
        ("Conv2d/groups0", "Conv2d", lambda d: nn.Conv2d(2, 2, 3, groups=0, device=d)),
        ("Conv2d/kernel3", "Conv2d", lambda d: nn.Conv2d(1, 2, (3, 3, 3), device=d)),
        ("Conv2d/input", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, device=d)(img(d, 1, 2, 5, 5))),
        ("Conv2d/rank", "Conv2d", lambda d: nn.Conv2d(1, 2, 3, device=d)(x(d))),
        ("Conv1d/k0", "Conv1d", lambda d: nn.Conv1d(1, 2, 0, device=d)),
        ("Conv1d/input", "Conv1d", lambda d: nn.Conv1d(1, 2, 3, device=d)(img(d, 1, 2, 5))),
        ("ConvTranspose2d/outpad", "ConvTranspose2d", lambda d: nn.ConvTranspose2d(1, 2, 3, output_padding=1, device=d)),
        ("ConvTranspose2d/pad-str", "ConvTranspose2d", lambda d: nn.ConvTranspose2d(1, 2, 3, padding="same", device=d)),
        ("BatchNorm1d/zero", "BatchNorm1d", lambda d: nn.BatchNorm1d(0, device=d)),
        ("BatchNorm1d/eps", "BatchNorm1d", lambda d: nn.BatchNorm1d(3, eps=-1.0, device=d)),
        ("BatchNorm1d/momentum", "BatchNorm1d", lambda d: nn.BatchNorm1d(3, momentum=1.5, device=d)),
        ("BatchNorm1d/input", "BatchNorm1d", lambda d: nn.BatchNorm1d(3, device=d)(x(d, 4, 2))),
        ("BatchNorm2d/zero", "BatchNorm2d", lambda d: nn.BatchNorm2d(0, device=d)),
        ("BatchNorm2d/rank", "BatchNorm2d", lambda d: nn.BatchNorm2d(3, device=d)(x(d, 4, 3))),
        ("GroupNorm/div", "GroupNorm", lambda d: nn.GroupNorm(2, 3, device=d)),
        ("GroupNorm/zero", "GroupNorm", lambda d: nn.GroupNorm(0, 3, device=d)),
        ("GroupNorm/input", "GroupNorm", lambda d: nn.GroupNorm(1, 3, device=d)(img(d, 2, 4, 2, 2))),
        ("LayerNorm/input", "LayerNorm", lambda d: nn.LayerNorm(4, device=d)(x(d))),
        ("RMSNorm/input", "RMSNorm", lambda d: nn.RMSNorm(4, device=d)(x(d))),
        ("MaxPool2d/input", "MaxPool2d", lambda d: nn.MaxPool2d(2)(x(d, 4))),
        ("Dropout/p", "Dropout", lambda d: nn.Dropout(2.0)),
        ("Sequential/type", "Sequential", lambda d: nn.Sequential(3)),
        ("load_state_dict/none", "Module.load_state_dict", lambda d: nn.Linear(3, 2, device=d).load_state_dict(None)),
        ("load_state_dict/list", "Module.load_state_dict",
         lambda d: nn.Linear(3, 2, device=d).load_state_dict({"weight": [1.0], "bias": [1.0]})),
        ("load_state_dict/pairs", "Module.load_state_dict", lambda d: nn.Linear(3, 2, device=d).load_state_dict([3])),
        ("load_state_dict/shape", "Module.load_state_dict",
         lambda d: nn.Linear(3, 2, device=d).load_state_dict({"weight": x(d, 3, 3), "bias": x(d, 2)})),
        ("get_submodule/name", "get_submodule", lambda d: nn.Linear(3, 2, device=d).get_submodule("x")),
        ("get_parameter/name", "get_parameter", lambda d: nn.Linear(3, 2, device=d).get_parameter("x")),
    ]
    for row in layer_bad:
        add(*row)
    return rows


CALLS = _calls()
# Messages that name the op and both values but not in the words the check looks for; listed so the table
# stays complete, each still raising its ember error (a reworded message must leave this list: see below).
WORDING = {
    "reshape/count", "view/count", "flatten/order", "narrow/length", "narrow/start", "split/sizes", "cat/empty",
    "stack/empty", "index/too-many", "masked_select/mask", "bool/many", "arange/step0", "conv1d/channels",
    "conv1d/groups", "conv2d/channels", "conv2d/groups", "conv_transpose2d/channels", "group_norm/groups",
    "batch_norm/eval", "interpolate/none", "sdpa/shape", "Conv2d/groups", "GroupNorm/div", "get_submodule/name",
    "get_parameter/name",
}
# how a message states what was expected (a bound, a rule) and what was found
EXPECTED_WORDS = ("expected", "must", "needs", "out of range for", "only one", "not 1", "smaller than")
FOUND_WORDS = ("found", " is ", " has ", " holds ", " got ", " vs ", " differ")


def _check(label, op, fn, device):
    """None when the call failed as it should, else what was wrong."""
    try:
        result = fn(device)
        if type(result) is ember.Tensor:
            result.tolist()  # a device that finds a fault later finds it at the read
    except EmberError as e:
        text = str(e)
        names = (op, ALIASES.get(op, op))
        if "found by the GPU" in text:  # found later, at a read, where only the primitive is known
            names += ("gather", "scatter")
        if not any(text.startswith(n) for n in names):
            return "%s: message does not start with %r: %s" % (label, op, text)
        if not [w for w in EXPECTED_WORDS if w in text]:
            return "%s: message does not say what was expected: %s" % (label, text)
        if not [w for w in FOUND_WORDS if w in text]:
            return "%s: message does not say what was found: %s" % (label, text)
        return None
    except Exception as e:
        return "%s: not an ember error: %s: %s" % (label, type(e).__name__, e)
    return "%s: no error (a silent result)" % label


def test_bad_calls(device):
    found = [(label, _check(label, op, fn, device)) for label, op, fn in CALLS]
    problems = [p for label, p in found if p and not (label in WORDING and "message does not say" in p)]
    stale = [label for label, p in found if label in WORDING and not p]
    assert not stale, "reworded, remove from WORDING: %s" % stale
    non_ember = sum(1 for p in problems if "not an ember error" in p)
    silent = sum(1 for p in problems if "no error" in p)
    tally("bad_calls", inputs=len(CALLS), non_ember=non_ember, silent_wrong=silent)
    assert len(CALLS) >= 300 and len(set(label for label, _, _ in CALLS)) == len(CALLS)
    assert not problems, "%d of %d bad calls:\n%s" % (len(problems), len(CALLS), "\n".join(problems))
