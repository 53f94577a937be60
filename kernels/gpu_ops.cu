/* gpu_ops.cu: see gpu_ops.h. */
#include "gpu_ops.h"

/* Each member set by name: several share a signature, so an order slip
 * would compile. */
#define SET(f) o.f = f
static const struct gpu_ops ops = [] {
	struct gpu_ops o = {};
	SET(gpu_count);
	SET(gpu_model_create);
	SET(gpu_model_forward);
	SET(gpu_model_forward_train);
	SET(gpu_model_backward);
	SET(gpu_model_grads_zero);
	SET(gpu_model_optim_alloc);
	SET(gpu_model_state_get);
	SET(gpu_model_state_put);
	SET(gpu_model_host_pin);
	SET(gpu_model_grad_norm);
	SET(gpu_model_adamw);
	SET(gpu_model_weights_from_master);
	SET(gpu_model_bytes);
	SET(gpu_model_device);
	SET(gpu_model_free);
	SET(gpu_model_attention);
	SET(gpu_generate);
	return o;
}();
#undef SET

extern "C" const struct gpu_ops *grpo_cuda_ops(int abi)
{
	return abi == GPU_OPS_ABI ? &ops : NULL;
}
