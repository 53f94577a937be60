/*
 * test_groupset: group integrity counts against hand-counted cases, and a
 * property over random streams of group records: the counts and id lists
 * agree with a brute-force recount, through the table's growth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/groupset.h"
#include "../tap.h"

static int has(const char **ids, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i], id) == 0)
			return 1;
	return 0;
}

int main(void)
{
	struct groupset s = { 0 };
	struct err e;
	const char **ids;
	size_t n;

	/* input 0: 5 (2 members), 9 (1); input 1: 5 (1), 11 (2), 9 (1) again in input 1 */
	groupset_add(&s, "5", 2, 0, &e);
	groupset_add(&s, "9", 1, 0, &e);
	groupset_add(&s, "5", 1, 1, &e);
	groupset_add(&s, "11", 2, 1, &e);
	groupset_add(&s, "9", 1, 1, &e);
	groupset_add(&s, "gsm8k-0042", 1, 1, &e);
	groupset_add(&s, "gsm8k-0042", 1, 1, &e);   /* twice in one input: not split */
	is_int((long long)s.single_records, 5, "groups of one member, counted per record");
	is_int((long long)s.split_ids, 2, "ids split across inputs, counted once each");
	groupset_ids(&s, GROUPSET_SPLIT, &ids, &n, &e);
	ok(n == 2 && strcmp(ids[0], "5") == 0 && strcmp(ids[1], "9") == 0, "split ids: 5 9");
	free(ids);
	groupset_ids(&s, GROUPSET_SINGLE, &ids, &n, &e);
	ok(n == 3 && strcmp(ids[0], "5") == 0 && strcmp(ids[1], "9") == 0 && strcmp(ids[2], "gsm8k-0042") == 0,
	   "single ids sorted: numbers by value, then text");
	free(ids);
	groupset_free(&s);

	/* property: random records over 3000 ids and 5 inputs, fed input by input */
	srand(7);
	enum { IDS = 3000, RECS = 20000 };
	static unsigned inputs_of[IDS], singles[IDS];
	for (int in = 0; in < 5; in++)
		for (int r = 0; r < RECS / 5; r++) {
			int id = rand() % IDS;
			uint32_t members = 1 + (uint32_t)(rand() % 3);
			char text[16];
			snprintf(text, sizeof text, "%d", id);
			if (groupset_add(&s, text, members, (uint64_t)in, &e) < 0)
				break;
			inputs_of[id] |= 1u << in;
			singles[id] += members == 1;
		}
	uint64_t want_split = 0, want_single = 0;
	for (int i = 0; i < IDS; i++) {
		want_split += __builtin_popcount(inputs_of[i]) > 1;
		want_single += singles[i];
	}
	is_int((long long)s.split_ids, (long long)want_split, "property: split ids match a recount");
	is_int((long long)s.single_records, (long long)want_single, "property: single-member records match");
	groupset_ids(&s, GROUPSET_SPLIT, &ids, &n, &e);
	int good = n == want_split;
	for (size_t i = 1; i < n; i++)
		good &= atoi(ids[i - 1]) < atoi(ids[i]);
	for (int i = 0; i < IDS && good; i += 97) {
		char text[16];
		snprintf(text, sizeof text, "%d", i);
		good &= has(ids, n, text) == (__builtin_popcount(inputs_of[i]) > 1);
	}
	ok(good, "property: the split list is sorted and holds exactly the split ids");
	free(ids);
	groupset_free(&s);
	return tap_done();
}
