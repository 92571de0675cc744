/* One translation unit with every portable kernel, built once per instruction set (isa_*.c). */
#include "k_elementwise.c"
#include "k_reduce.c"
#include "k_gemm.c"
#include "k_conv.c"
#include "k_conv_lanes.c"
#include "k_conv_grad.c"
#include "k_movement.c"
#include "k_nn.c"
