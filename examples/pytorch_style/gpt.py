"""A small GPT in PyTorch's idiom (after nanoGPT's ``model.py``): token and position embeddings,
causal self-attention blocks, output weights tied to the token embedding, AdamW with parameter
groups (weight decay on matrices only) and top-k sampling. The same file runs under PyTorch and
under ember; only the import block below differs.

    python examples/pytorch_style/gpt.py --framework ember --steps 50      # or: --framework torch

Data: a character-level corpus (``TEXT``), batches drawn with numpy, the same for both frameworks.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import framework  # noqa: E402

FRAMEWORK = framework()
if FRAMEWORK == "torch":
    import torch
    import torch.nn as nn
    from torch.nn import functional as F
    DEVICE = torch.device("cpu")
    manual_seed = torch.manual_seed
else:
    import ember as torch
    import ember.nn as nn
    from ember.nn import functional as F
    import ember.optim  # noqa: F401  (torch.optim below)
    from ember.accel import Autodiff
    DEVICE = Autodiff(torch.Cpu())  # ember records gradients on devices that say so
    manual_seed = torch.seed

TEXT = ("the quick brown fox jumps over the lazy dog. a small model learns to spell the words it sees, "
        "one character after another, and then writes new lines of its own. ") * 4


class GPTConfig:
    def __init__(self, block_size=32, vocab_size=64, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True):
        self.block_size = block_size
        self.vocab_size = vocab_size
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_embd = n_embd
        self.dropout = dropout
        self.bias = bias


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying: one parameter, two uses
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.int64, device=idx.device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# -- data and the training loop -------------------------------------------------------------------

CHARS = sorted(set(TEXT))
ENCODED = np.array([CHARS.index(c) for c in TEXT], dtype=np.int64)


def get_batch(rng, batch_size, block_size):
    """(inputs, targets) int64 numpy arrays (batch_size, block_size), the targets shifted by one."""
    ix = rng.integers(0, len(ENCODED) - block_size - 1, size=batch_size)
    x = np.stack([ENCODED[i:i + block_size] for i in ix])
    y = np.stack([ENCODED[i + 1:i + 1 + block_size] for i in ix])
    return x, y


def build(args):
    manual_seed(args.seed)
    config = GPTConfig(block_size=args.block_size, vocab_size=len(CHARS), n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd, dropout=args.dropout)
    model = GPT(config)
    if args.load_weights:
        if FRAMEWORK == "torch":
            from safetensors.torch import load_model
            load_model(model, args.load_weights)
        else:
            model.load(args.load_weights)
    model = model.to(DEVICE)
    optimizer = model.configure_optimizers(args.weight_decay, args.lr, (0.9, 0.95))
    return model, optimizer


def train(args, model, optimizer):
    """``args.steps`` AdamW steps; returns the losses."""
    rng = np.random.default_rng(args.seed)
    losses = []
    model.train()
    for step in range(args.steps):
        x, y = get_batch(rng, args.batch_size, args.block_size)
        x, y = torch.from_numpy(x).to(DEVICE), torch.from_numpy(y).to(DEVICE)
        logits, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if args.log_interval and step % args.log_interval == 0:
            print("step %d: loss %.4f" % (step, loss.item()))
    return losses


def parse(argv=None):
    parser = argparse.ArgumentParser(description="A small GPT on characters, under PyTorch or ember")
    parser.add_argument("--framework", default=FRAMEWORK, choices=("torch", "ember"))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--load-weights", default=None, help="initial weights (safetensors)")
    parser.add_argument("--top-k", type=int, default=5)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    model, optimizer = build(args)
    train(args, model, optimizer)
    model.eval()
    start = torch.from_numpy(ENCODED[None, :8].copy()).to(DEVICE)
    out = model.generate(start, 40, top_k=args.top_k)
    print("".join(CHARS[i] for i in out[0].tolist()))


if __name__ == "__main__":
    main()
