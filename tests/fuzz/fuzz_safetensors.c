/* libFuzzer target: the safetensors reader on arbitrary bytes must accept a
 * file or fail cleanly, never read outside it; every float tensor it accepts
 * converts with its own shape. */
#include <stdint.h>
#include <stdlib.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_model m;
	struct err e;
	if (st_open_mem(&m, data, size, "fuzz", &e) < 0)
		return 0;
	for (int i = 0; i < m.ntensors; i++) {
		const struct st_tensor *t = &m.tensors[i];
		size_t count = t->nbytes / st_dtype_size(t->dtype);
		if (count > (1u << 20))
			continue;
		float *out = malloc(count ? count * sizeof *out : 1);
		if (out)
			st_read_f32(&m, t->name, t->shape, t->ndim, out, &e);
		free(out);
	}
	st_close(&m);
	return 0;
}
