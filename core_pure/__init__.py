"""ember: a deep-learning framework whose core is plain Python, from CPython to microcontrollers.

>>> import ember
>>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> (x @ x).sum()
"""
from .dtypes import (bool_, int8, int32, int64, float16, bfloat16, float32, float64, DType)
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
from .convenience import no_grad, from_numpy, as_tensor

bool = bool_  # noqa: A001  (ember.bool reads like torch.bool; the builtin stays reachable as builtins.bool)

__version__ = "0.1.0"

