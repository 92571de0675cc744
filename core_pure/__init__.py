"""ember: a deep-learning framework whose core is plain Python, from CPython to microcontrollers.

>>> import ember
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x).sum()
"""
import sys as _sys

from .dtypes import (bool_, int8, uint8, int32, int64, float16, bfloat16, float32, float64, DType)
from .errors import (EmberError, ShapeError, DTypeError, DeviceError, IndexOutOfRange, ArgumentError,
                     ArgumentTypeError, RecordError, OutOfMemoryError, DeployError)
from .tensor import Tensor
from .backend import Backend
from .backends.cpu import Cpu
from .device import default_device, set_default_device
from .rng import Generator, seed
from .creation import (tensor, zeros, ones, full, zeros_like, ones_like, full_like, empty, empty_like,
                       arange, linspace, eye, rand, randn, randint, random, multinomial)
from .distributions import Distribution, Uniform, Normal, Bernoulli
from .elementwise import where, clamp, isfinite
from .movement import cat, stack, flip, roll, split, chunk, narrow, tril, triu
from .indexing import gather, scatter, index_select, masked_fill, masked_select, nonzero, take
from .reduction import sort, argsort, topk, unique, cumsum, cumprod, logsumexp
from .linalg import matmul
from .linalg import diag, diagonal
from .movement import meshgrid, repeat_interleave, unflatten
from .reduction import logcumsumexp, std_mean, var_mean


# einsum and scatter_reduce load their modules on first call, so a board that never calls them
# does not hold their code
def einsum(equation, *operands):
    """Einstein summation in PyTorch's subscript form: ``einsum("bij,bjk->bik", a, b)``."""
    from .contraction import einsum as run
    return run(equation, *operands)


def scatter_reduce(input, dim, index, src, reduce, include_self=True):
    """A copy of ``input`` with ``src`` combined in at ``index`` along ``dim`` by sum, prod, mean,
    amax or amin."""
    from .scatter_reduction import scatter_reduce as run
    return run(input, dim, index, src, reduce, include_self)

from .convenience import no_grad, from_numpy, as_tensor

bool = bool_  # noqa: A001  (ember.bool reads like torch.bool; the builtin stays reachable as builtins.bool)
# PyTorch's other dtype aliases (torch.float is float32, ...); the builtins stay reachable as builtins.X
float, double, half, int, long = float32, float64, float16, int32, int64  # noqa: A001


def __getattr__(name):
    """PyTorch's top-level forms of Tensor methods (``ember.abs``, ``ember.add``...), loaded on first use
    from ``ember.functional`` so that ``import ember`` stays small on a board."""
    if name[:2] == "__":
        raise AttributeError("module 'ember' has no attribute %r" % (name,))
    missing = None
    if _sys.implementation.name == "micropython":
        # MicroPython's ``from ember import x`` asks here before it imports the submodule x
        try:
            __import__(__name__ + "." + name)
            return _sys.modules[__name__ + "." + name]
        except ImportError as e:
            missing = e
    if name[0] != "_":
        __import__(__name__ + ".functional")
        fn = getattr(_sys.modules[__name__ + ".functional"], name, None)
        if fn is not None:
            globals()[name] = fn  # the next ember.X is a plain attribute
            return fn
    if missing is not None and name[0] == "_":
        raise missing
    raise AttributeError("module 'ember' has no attribute %r" % (name,))


__version__ = "0.1.0"

from .backends.cpu import ckernels as _kernel_loader  # noqa: E402  (not "_ckernels": that is the C module)
_kernel_loader.warn_if_broken()  # CPython only: compiled kernels that ship but do not load are no secret
del _kernel_loader
