/*
 * test_gsm8k_labelled: the gsm8k reward against tests/data/gsm8k-labelled.jsonl,
 * GSM8K test problems answered in the styles models write, each labelled
 * correct or incorrect (by construction: see tests/data/make_gsm8k_labelled.py,
 * which wrote it). Issue 12 asks for agreement with at least 99.5% of the
 * labels; every disagreement is printed with what the reward read.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score/reward.h"
#include "tap.h"

static const struct reward_opt no_opt = { 0 };

int main(void)
{
	const char *top = getenv("GRPO_TOP");
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/data/gsm8k-labelled.jsonl", top ? top : ".");
	FILE *f = fopen(path, "r");
	if (!f)
		skip_all("no labelled set at tests/data/gsm8k-labelled.jsonl (set GRPO_TOP)");
	char *line = NULL;
	size_t cap = 0;
	int lines = 0, bad = 0, agree = 0, n_label[2] = { 0, 0 }, agree_label[2] = { 0, 0 };
	while (getline(&line, &cap, f) > 0) {
		lines++;
		cJSON *j = cJSON_Parse(line);
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(j, "id"));
		const char *style = cJSON_GetStringValue(cJSON_GetObjectItem(j, "style"));
		const char *label = cJSON_GetStringValue(cJSON_GetObjectItem(j, "label"));
		const char *answer = cJSON_GetStringValue(cJSON_GetObjectItem(j, "answer"));
		const char *resp = cJSON_GetStringValue(cJSON_GetObjectItem(j, "response"));
		int want = label && strcmp(label, "correct") == 0;
		if (!id || !style || !answer || !resp || !label || (!want && strcmp(label, "incorrect") != 0)) {
			diag("line %d: lacks id, style, answer, response or a label correct|incorrect", lines);
			bad++;
			cJSON_Delete(j);
			continue;
		}
		size_t n = strlen(resp);
		int got = reward_eval(REWARD_GSM8K, &no_opt, resp, n, answer, 0) == 1;
		n_label[want]++;
		if (got == want) {
			agree++;
			agree_label[want]++;
		} else {
			double v;
			char read[64] = "no number";
			if (reward_gsm8k_extract(resp, n, &v))
				snprintf(read, sizeof read, "%.17g", v);
			diag("disagree: %s (%s): labelled %s, the reward read %s against '%s'", id, style, label, read,
			     answer);
		}
		cJSON_Delete(j);
	}
	free(line);
	fclose(f);
	int rated = lines - bad;
	is_int(bad, 0, "every one of the %d lines has an id, a style, an answer, a response and a label", lines);
	ok(n_label[1] >= 300 && n_label[0] >= 150, "%d labelled correct, %d incorrect", n_label[1], n_label[0]);
	ok(rated > 0 && agree * 1000 >= rated * 995, "the gsm8k reward agrees with %d of %d labels (%.2f%%; "
	   "correct %d/%d, incorrect %d/%d); at least 99.5%% wanted", agree, rated,
	   rated ? 100.0 * agree / rated : 0.0, agree_label[1], n_label[1], agree_label[0], n_label[0]);
	return tap_done();
}
