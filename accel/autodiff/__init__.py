"""Autodiff as a backend decorator: ``Autodiff(ember.Cpu())`` records, ``loss.backward()`` differentiates."""
from .device import Autodiff, AdArray
from .gradients import Gradients
from .graph import no_grad

__all__ = ["Autodiff", "AdArray", "Gradients", "no_grad"]
