// cublasLt.h for model_sim (see run.sh): the one name of cuBLASLt's that
// kernels/matmul.cuh uses; matmul.cc here does the products on the CPU.
#pragma once
typedef struct sim_cublaslt *cublasLtHandle_t;
