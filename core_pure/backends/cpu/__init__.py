"""The pure-Python Cpu backend: the reference every faster backend is checked against."""
from .device import Cpu
