/*
 * test_mathans_sympy: the math reward's comparison against sympy, its
 * second oracle. tests/data/mathans-sympy.jsonl holds pairs of LaTeX
 * answers printed by sympy's latex() and labelled equal or not by sympy
 * (tests/data/make_mathans_fixture.py wrote it: expressions, numbers,
 * radicals, trigonometry, sets, intervals, unions, matrices, relations).
 * Every pair must be read and get sympy's verdict, both ways; each
 * disagreement is printed.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/mathans.h"
#include "tap.h"

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/data/mathans-sympy.jsonl", top ? top : ".");
	FILE *f = fopen(path, "r");
	if (!f)
		skip_all("no pairs at tests/data/mathans-sympy.jsonl (set GRPO_TOP)");
	char *line = NULL;
	size_t cap = 0;
	int lines = 0, pairs = 0, declared = -1, agree = 0, unparsed = 0, equal = 0;
	while (getline(&line, &cap, f) > 0) {
		cJSON *j = cJSON_Parse(line);
		lines++;
		if (lines == 1) {   /* the header: how many pairs follow */
			cJSON *n = cJSON_GetObjectItem(j, "pairs");
			declared = cJSON_IsNumber(n) ? n->valueint : -1;
			cJSON_Delete(j);
			continue;
		}
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItem(j, "a"));
		const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(j, "b"));
		const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(j, "what"));
		cJSON *label = cJSON_GetObjectItem(j, "equal");
		if (!a || !b || !what || !cJSON_IsBool(label)) {
			diag("line %d: lacks a, b, what or equal", lines);
			cJSON_Delete(j);
			continue;
		}
		pairs++;
		enum mathans_result want = cJSON_IsTrue(label) ? MATHANS_EQUAL : MATHANS_DIFFERENT;
		enum mathans_result ab = mathans_compare(a, strlen(a), b, strlen(b));
		enum mathans_result ba = mathans_compare(b, strlen(b), a, strlen(a));
		equal += want == MATHANS_EQUAL;
		unparsed += ab == MATHANS_UNPARSED;
		if (ab == want && ba == want)
			agree++;
		else
			diag("line %d (%s): %s against %s: sympy says %s, got %d and %d the other way", lines, what, a, b,
			     want == MATHANS_EQUAL ? "equal" : "different", ab, ba);
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	diag("%d pairs (%d equal by sympy): %d agree, %d unparsed", pairs, equal, agree, unparsed);
	is_int(pairs, declared, "every pair the header declares is read");
	ok(pairs > 1000, "over a thousand pairs");
	is_int(agree, pairs, "every pair gets sympy's verdict, both ways");
	return tap_done();
}
