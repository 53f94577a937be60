// loss.cuh: the GRPO loss's per-token gradient on the device, for the LM
// head fused with it (gpu_model_forward_train): lib/train/loss_token.h's
// maths, the host's own, one thread a row. Not an interface.
#ifndef GRPO_KERNELS_LOSS_CUH
#define GRPO_KERNELS_LOSS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "train/loss_token.h"

// The loss's inputs by predicting row (row t: token t + 1; flags 0 where
// the row predicts nothing or its token is off the loss mask); behav and
// ref NULL where there are none.
struct loss_rows {
	const uint8_t *flags;   // GPU_LOSS_* (gpu_model.h)
	const float *adv, *old, *behav, *ref;
	const double *w;
};

// dlp and dent (n rows) from the rows' logprobs lp: the loss's gradient in
// each row's logprob and entropy; 0 where flags are 0, and dent 0 without
// an entropy coefficient (as the host passes no dentropy then).
cudaError_t launch_loss_rows(float *dlp, float *dent, const float *lp, struct loss_rows in, struct loss_opts o, int n,
			     cudaStream_t s);

#endif
