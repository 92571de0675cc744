"""Every layer and config in one namespace: ``import ember.nn.layers as nn; nn.Linear(4, 2)``.

Convenient on a desktop; on a board import the layer modules a model uses instead
(``from ember.nn.linear import Linear``), since this imports them all.
"""
from .activation import (ELU, GELU, Hardsigmoid, Hardswish, LeakyReLU, LogSoftmax, Mish, ReLU, SiLU, Sigmoid, Softmax,
                         Softplus, Tanh, ELUConfig, GELUConfig, HardsigmoidConfig, HardswishConfig, LeakyReLUConfig,
                         LogSoftmaxConfig, MishConfig, ReLUConfig, SiLUConfig, SigmoidConfig, SoftmaxConfig,
                         SoftplusConfig, TanhConfig)
from .activation import (CELU, SELU, Hardtanh, LogSigmoid, ReLU6, Softmin, Softsign, CELUConfig, SELUConfig,
                         HardtanhConfig, LogSigmoidConfig, ReLU6Config, SoftminConfig, SoftsignConfig)
from .attention import MultiHeadAttention, MultiHeadAttentionConfig, MultiheadAttention, MultiheadAttentionConfig
from .config import REQUIRED, Config
from .conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig, ConvTranspose2d, ConvTranspose2dConfig
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, DropoutConfig
from .embedding import Embedding, EmbeddingConfig
from .flatten import Flatten, FlattenConfig, Identity, IdentityConfig
from .linear import Bilinear, BilinearConfig, Linear, LinearConfig
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .module import LoadReport, Module, ModuleDict, ModuleList, Param, Sequential
from .norm import (BatchNorm1d, BatchNorm1dConfig, BatchNorm2d, BatchNorm2dConfig, GroupNorm, GroupNormConfig,
                   LayerNorm, LayerNormConfig, RMSNorm, RMSNormConfig)
from .pool import (AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, AvgPool1d, AvgPool1dConfig, AvgPool2d, AvgPool2dConfig,
                   MaxPool1d, MaxPool1dConfig, MaxPool2d, MaxPool2dConfig)
from .positional import PositionalEncoding, PositionalEncodingConfig, RotaryEncoding, RotaryEncodingConfig
from .recurrent import GRU, GRUConfig, LSTM, LSTMConfig
from .conv import Conv3d, Conv3dConfig, ConvTranspose3d, ConvTranspose3dConfig
from .pool import AvgPool3d, AvgPool3dConfig, MaxPool3d, MaxPool3dConfig, MaxUnpool2d, MaxUnpool2dConfig
from .transformer import (TransformerEncoder, TransformerEncoderConfig, TransformerEncoderLayer,
                          TransformerEncoderLayerConfig)
from . import functional, init
