/* Codes shared by the C kernels and core_pure/backends/cpu/ckernels.py (which reads them from the
   compiled module). Plain #define lines only: cffi's cdef parses this file as it is. */

/* element types */
#define EMB_F32 0
#define EMB_F64 1
#define EMB_I8 2
#define EMB_I32 3
#define EMB_I64 4
#define EMB_U8 5

/* unary ops */
#define EMB_U_NEG 0
#define EMB_U_ABS 1
#define EMB_U_SIGN 2
#define EMB_U_EXP 3
#define EMB_U_LOG 4
#define EMB_U_SQRT 5
#define EMB_U_RSQRT 6
#define EMB_U_SIN 7
#define EMB_U_COS 8
#define EMB_U_TAN 9
#define EMB_U_ASIN 10
#define EMB_U_ACOS 11
#define EMB_U_ATAN 12
#define EMB_U_SINH 13
#define EMB_U_COSH 14
#define EMB_U_TANH 15
#define EMB_U_ERF 16
#define EMB_U_SIGMOID 17
#define EMB_U_EXPM1 18
#define EMB_U_LOG1P 19
#define EMB_U_FLOOR 20
#define EMB_U_CEIL 21
#define EMB_U_ROUND 22
#define EMB_U_TRUNC 23
#define EMB_U_RECIPROCAL 24
#define EMB_U_BITWISE_NOT 25
#define EMB_U_ISNAN 26
#define EMB_U_ISINF 27
#define EMB_U_LOGICAL_NOT 28
#define EMB_U_COUNT 29

/* binary ops; comparisons (EQ..GE) write bytes 0/1 */
#define EMB_B_ADD 0
#define EMB_B_SUB 1
#define EMB_B_MUL 2
#define EMB_B_DIV 3
#define EMB_B_POW 4
#define EMB_B_MAXIMUM 5
#define EMB_B_MINIMUM 6
#define EMB_B_FLOORDIV 7
#define EMB_B_MOD 8
#define EMB_B_ATAN2 9
#define EMB_B_EQ 10
#define EMB_B_NE 11
#define EMB_B_LT 12
#define EMB_B_LE 13
#define EMB_B_GT 14
#define EMB_B_GE 15
#define EMB_B_AND 16
#define EMB_B_OR 17
#define EMB_B_XOR 18
#define EMB_B_LSHIFT 19
#define EMB_B_RSHIFT 20
#define EMB_B_COUNT 21

/* reductions along one dim */
#define EMB_R_SUM 0
#define EMB_R_PROD 1
#define EMB_R_MAX 2
#define EMB_R_MIN 3
#define EMB_R_ARGMAX 4
#define EMB_R_ARGMIN 5
#define EMB_R_ANY 6
#define EMB_R_ALL 7

/* pooling */
#define EMB_P_MAX 0
#define EMB_P_AVG 1

/* gelu forms */
#define EMB_GELU_ERF 0
#define EMB_GELU_TANH 1

/* instruction sets the dispatcher can pick */
#define EMB_ISA_BASE 0
#define EMB_ISA_AVX2 1
#define EMB_ISA_AVX512 2

/* kernels a captured step's plan calls from one loop (emb_run_plan, plan.c) */
#define EMB_PLAN_COPY_ND 0
#define EMB_PLAN_CAST 1
#define EMB_PLAN_UNARY 2
#define EMB_PLAN_BINARY 3
#define EMB_PLAN_BINARY1 4
#define EMB_PLAN_WHERE 5
#define EMB_PLAN_REDUCE 6
#define EMB_PLAN_MATMUL 7
#define EMB_PLAN_CONV2D 8
#define EMB_PLAN_POOL2D 9
#define EMB_PLAN_GATHER 10
#define EMB_PLAN_SCATTER 11
#define EMB_PLAN_GELU_F32 12
#define EMB_PLAN_SOFTMAX_F32 13
#define EMB_PLAN_BIAS_ROWS_F32 14
#define EMB_PLAN_OPTIM_STEP 15
#define EMB_PLAN_CONV2D_GRAD_INPUT 16
#define EMB_PLAN_CONV2D_GRAD_WEIGHT 17
#define EMB_PLAN_POOL2D_GRAD 18
#define EMB_PLAN_REDUCE_DIMS 19
