/* libFuzzer target: config.json parsing on arbitrary bytes; a config that
 * parses must write back as JSON that parses to the same config. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_config c, back;
	struct err e;
	if (model_config_parse((const char *)data, size, "fuzz", &c, &e) < 0)
		return 0;
	struct buf b = { 0 };
	if (model_config_json(&c, "float32", &b) == 0) {
		if (model_config_parse((const char *)b.data, b.len, "written", &back, &e) < 0 ||
		    memcmp(&c, &back, sizeof c) != 0)
			abort();
	}
	buf_free(&b);
	return 0;
}
