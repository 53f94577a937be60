/* libFuzzer target: a chat line (JSON) rendered in every format; the ChatML
 * formats that keep the history whole (all but Qwen3's) and Zephyr's must
 * carry every message's content unchanged, and the others render or refuse
 * (roles out of turn), never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/chat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chat_msgs cm;
	struct err e;
	if (chat_parse_json((const char *)data, size, &cm, &e) < 0)
		return 0;
	for (int f = 0; chat_format_names[f]; f++) {
		struct buf b = { 0 };
		int whole = f == CHAT_QWEN || f == CHAT_QWEN25 || f == CHAT_QWEN25_MATH || f == CHAT_SMOLLM2 ||
		            f == CHAT_ZEPHYR;   /* contents written as given */
		if (chat_render((enum chat_format)f, cm.m, cm.n, cm.flags, cm.date, &b, &e) == 0 && whole)
			for (size_t i = 0; i < cm.n; i++)
				if (cm.m[i].content[0] && !memmem(b.data, b.len, cm.m[i].content, strlen(cm.m[i].content)))
					abort();
		buf_free(&b);
	}
	chat_msgs_free(&cm);
	return 0;
}
