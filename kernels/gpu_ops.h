/*
 * gpu_ops.h: the CUDA library as a table of its C API, the one symbol that
 * $(BUILD)/libgrpo-cuda.so exports, so that a program can load it with
 * dlopen only when a run goes to the GPU (lib/model/model_gpu.c) and never
 * pays for cuBLAS and the CUDA runtime otherwise.
 *
 * The table holds gpu_model.h's and gpu_decode.h's functions, not
 * lib/model's: the kernels include nothing of lib/, so the shared library
 * needs no symbol of the program that loads it (it is linked with
 * -z defs) and keeps no state of lib/'s; lib/model/model_gpu.c, in the
 * program, turns its structures into these calls' arrays and their
 * messages into errors.
 *
 * grpo_cuda_ops(GPU_OPS_ABI) returns the table, or NULL where the library
 * was built with another GPU_OPS_ABI: bump it whenever the table or any
 * signature or structure it passes changes.
 */
#ifndef GRPO_KERNELS_GPU_OPS_H
#define GRPO_KERNELS_GPU_OPS_H

#include "gpu_decode.h"
#include "gpu_model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_OPS_ABI 3

/* Each member is the function of the same name (gpu_model.h, gpu_decode.h). */
struct gpu_ops {
	int (*gpu_count)(char *msg, size_t msglen);
	int (*gpu_model_create)(struct gpu_model **out, const struct gpu_model_shape *shape,
				const struct gpu_model_weights *w, int maxT, enum gpu_dtype dtype, enum gpu_mode mode,
				char *msg, size_t msglen);
	int (*gpu_model_forward)(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens, int nseq,
				 const float *temps, float *logprob, float *entropy, char *msg, size_t msglen);
	int (*gpu_model_forward_train)(struct gpu_model *g, const int32_t *ids, int T, const uint32_t *seq_lens,
				       int nseq, const float *temps, const struct gpu_loss *loss, float *logprob,
				       float *entropy, char *msg, size_t msglen);
	int (*gpu_model_backward)(struct gpu_model *g, const float *dlogprob, const float *dentropy, char *msg,
				  size_t msglen);
	int (*gpu_model_grads_zero)(struct gpu_model *g, char *msg, size_t msglen);
	int (*gpu_model_optim_alloc)(struct gpu_model *g, char *msg, size_t msglen);
	int (*gpu_model_state_get)(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *out,
				   char *msg, size_t msglen);
	int (*gpu_model_state_put)(struct gpu_model *g, enum gpu_state which, const struct gpu_host_params *in,
				   char *msg, size_t msglen);
	int (*gpu_model_host_pin)(struct gpu_model *g, void *p, size_t bytes, char *msg, size_t msglen);
	int (*gpu_model_grad_norm)(struct gpu_model *g, double *norm, char *msg, size_t msglen);
	int (*gpu_model_adamw)(struct gpu_model *g, const struct gpu_adamw *p, char *msg, size_t msglen);
	int (*gpu_model_weights_from_master)(struct gpu_model *g, char *msg, size_t msglen);
	size_t (*gpu_model_bytes)(const struct gpu_model *g);
	void (*gpu_model_device)(const struct gpu_model *g, char *name, size_t namelen, size_t *used);
	void (*gpu_model_free)(struct gpu_model *g);
	const char *(*gpu_model_attention)(const struct gpu_model *g);
	int (*gpu_generate)(struct gpu_model *g, const int32_t *const *prompts, const int *lens, int B,
			    const uint64_t *states, const struct gpu_gen_params *p, struct gpu_gen_seq *out,
			    struct gpu_gen_stats *stats, char *msg, size_t msglen);
};

const struct gpu_ops *grpo_cuda_ops(int abi);

#ifdef __cplusplus
}
#endif

#endif
