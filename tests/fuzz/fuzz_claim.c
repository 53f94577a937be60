/* libFuzzer target: bytes as a claim record (what grpo-spool recover reads
 * from rank_X/.claimed). A record that parses is written again and read
 * back: the same identity, and the same text when written once more. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spool/claim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[512], again[512], twice[512];
	if (size >= sizeof text)
		return 0;   /* claim_check reads at most 511 bytes of a record */
	memcpy(text, data, size);
	text[size] = '\0';
	struct claim_id a, b;
	if (claim_parse_id(text, &a) < 0)
		return 0;
	int n = claim_format_id(&a, again, sizeof again);
	if (n < 0 || claim_parse_id(again, &b) < 0 || memcmp(&a, &b, sizeof a) != 0)
		abort();
	if (claim_format_id(&b, twice, sizeof twice) != n || strcmp(again, twice) != 0)
		abort();
	return 0;
}
