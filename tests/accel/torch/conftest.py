"""One intra-op thread for torch in these tests: they run many small ops, where torch's thread pool
on a loaded 2-core machine costs a thousandfold (a 96x8 @ 8x32 matmul: 2.6 ms against 2.3 us)."""
import torch

torch.set_num_threads(1)
