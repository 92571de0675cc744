"""A model whose forward calls an op the deployment path lacks (gelu)."""
import ember.nn.functional as F
from ember.nn import Module
from ember.nn.linear import Linear


class UsesGelu(Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 2)

    def forward(self, x):
        return F.gelu(self.fc(x.flatten(1)))
