/*
 * grpo-init: write a Hugging Face model directory with random weights.
 *
 * Options set the shape (or a named preset does); the directory gets
 * config.json, generation_config.json, model.safetensors (or shards with an
 * index) and, when given, a copy of the tokenizer. Everything is written into
 * a temporary directory beside the target and renamed into place last, so
 * the target either does not exist or is complete.
 */
#include <cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "base/tempfile.h"
#include "model/model.h"
#include "model/tokenizer.h"

#include "cli.h"
#include "data/jsonview.h"

static const char *prog = "grpo-init";

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: %s [--preset NAME] [--family qwen2|qwen3|llama] [--hidden H] [--layers L]\n"
	        "       [--heads A] [--kv-heads K] [--intermediate I] [--vocab V] [--head-dim D]\n"
	        "       [--rope-theta X] [--rms-eps X] [--tie | --no-tie] [--bos ID] [--eos ID]...\n"
	        "       [--tokenizer FILE] [--seed S] [--dtype float32|bfloat16] [--shard-size BYTES]\n"
	        "       [-v] -o DIR\n"
	        "Write a Hugging Face model directory with random weights.\n"
	        "      --preset NAME        start from a named shape: %s\n"
	        "      --family FAMILY      qwen2, qwen3 or llama\n"
	        "      --hidden H, --layers L, --heads A, --kv-heads K, --intermediate I, --vocab V\n"
	        "                           the shape (--kv-heads default: --heads)\n"
	        "      --head-dim D         size of each attention head, even (default: hidden / heads)\n"
	        "      --rope-theta X       RoPE base (1000000 for Qwen, 500000 for Llama)\n"
	        "      --rms-eps X          RMSNorm epsilon (1e-6; 1e-5 for Llama)\n"
	        "      --tie, --no-tie      share the embedding with the output layer (default), or not\n"
	        "      --bos ID, --eos ID   token ids for config.json; --eos may be repeated\n"
	        "      --tokenizer FILE     copy this tokenizer.json (and tokenizer_config.json beside it)\n"
	        "      --seed S             seed of the weights (0)\n"
	        "      --dtype DTYPE        float32 (default) or bfloat16\n"
	        "      --shard-size BYTES   largest shard, with K, M or G (5G)\n"
	        "  -o, --output DIR         the directory to create (required)\n"
	        "  -v, --verbose            report the parameter count and size on standard error\n"
	        "  -h, --help               this text\n"
	        "  -V, --version            the version\n",
	        prog, MODEL_PRESETS);
}

static cJSON *read_json(const char *path, struct err *e)
{
	struct buf b = { 0 };
	if (buf_read_file(&b, path, e) < 0)
		return NULL;
	cJSON *j = json_parse_n((const char *)b.data, b.len, NULL);
	buf_free(&b);
	if (!j && errno == ENOMEM)
		err_sys(e, "%s", path);
	else if (!j)
		err_set(e, "%s: not JSON", path);
	return j;
}

/* What grpo-init takes from a tokenizer: how many ids it uses, and its bos and end tokens. */
struct tok_info {
	int ids;                    /* highest id + 1, vocabulary and added tokens */
	int bos;                    /* -1: none */
	int eos[MODEL_MAX_EOS], n_eos;
};

/* tokenizer_config.json's bos_token or eos_token: a string, {"content": ...} or null. */
static const char *config_token(const cJSON *cfg, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
	if (cJSON_IsObject(v))
		v = cJSON_GetObjectItemCaseSensitive(v, "content");
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add_eos(struct tok_info *ti, int id)
{
	for (int i = 0; i < ti->n_eos; i++)
		if (ti->eos[i] == id)
			return;
	if (id >= 0 && ti->n_eos < MODEL_MAX_EOS)
		ti->eos[ti->n_eos++] = id;
}

/*
 * Load tokenizer.json (tokenizer.h: one the tools cannot read is an error
 * here, not when the first of them loads the model) and read, when beside
 * it, tokenizer_config.json (side). bos: the config's bos_token, else
 * <|begin_of_text|>. End tokens: the config's eos_token first, then every
 * end-of-turn or end-of-text token the tokenizer has, so that sampling stops
 * at whichever a chat model writes (Qwen3: <|im_end|>, <|endoftext|>;
 * Llama 3: <|eot_id|>, <|end_of_text|>).
 */
static int tokenizer_info(const char *path, const char *side, struct tok_info *ti, struct err *e)
{
	static const char *const ends[] = { "<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>",
	                                    "<|end_of_text|>" };
	memset(ti, 0, sizeof *ti);
	ti->bos = -1;
	struct tokenizer *t = tok_load(path, e);
	if (!t)
		return -1;
	ti->ids = (int)tok_vocab_size(t);
	cJSON *cfg = access(side, R_OK) == 0 ? read_json(side, e) : NULL;
	const char *bos = config_token(cfg, "bos_token"), *eos = config_token(cfg, "eos_token");
	ti->bos = tok_token_id(t, bos ? bos : "<|begin_of_text|>");
	if (eos)
		add_eos(ti, tok_token_id(t, eos));
	for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
		add_eos(ti, tok_token_id(t, ends[i]));
	cJSON_Delete(cfg);
	tok_free(t);
	return 0;
}

static int copy_file(const char *from, const char *to, struct err *e)
{
	int in = fsys_open_read(from, e);
	if (in < 0)
		return -1;
	int out = fsys_open_excl(to, e);
	if (out < 0) {
		close(in);
		return -1;
	}
	char b[65536];
	ssize_t n;
	int r = 0;
	while (r == 0 && (n = read(in, b, sizeof b)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = err_sys(e, "%s: read", from);
		else
			r = fsys_write_all(out, b, (size_t)n, to, e);
	}
	close(in);
	if (r == 0)
		r = fsys_fsync(out, to, e);
	if (fsys_close(out, to, r == 0 ? e : NULL) < 0)
		r = -1;
	return r;
}

int main(int argc, char **argv)
{
	enum { O_FAMILY = 256, O_HIDDEN, O_LAYERS, O_HEADS, O_KV, O_INTER, O_VOCAB, O_HEADDIM, O_THETA, O_EPS, O_TIE,
	       O_NOTIE, O_BOS, O_EOS, O_TOK, O_SEED, O_DTYPE, O_SHARD, O_PRESET };
	static const struct option opts[] = {
		{ "preset", required_argument, 0, O_PRESET }, { "family", required_argument, 0, O_FAMILY },
		{ "hidden", required_argument, 0, O_HIDDEN }, { "layers", required_argument, 0, O_LAYERS },
		{ "heads", required_argument, 0, O_HEADS }, { "kv-heads", required_argument, 0, O_KV },
		{ "intermediate", required_argument, 0, O_INTER }, { "vocab", required_argument, 0, O_VOCAB },
		{ "head-dim", required_argument, 0, O_HEADDIM }, { "rope-theta", required_argument, 0, O_THETA },
		{ "rms-eps", required_argument, 0, O_EPS }, { "tie", no_argument, 0, O_TIE },
		{ "no-tie", no_argument, 0, O_NOTIE }, { "bos", required_argument, 0, O_BOS },
		{ "eos", required_argument, 0, O_EOS }, { "tokenizer", required_argument, 0, O_TOK },
		{ "seed", required_argument, 0, O_SEED }, { "dtype", required_argument, 0, O_DTYPE },
		{ "shard-size", required_argument, 0, O_SHARD }, { "output", required_argument, 0, 'o' },
		{ "verbose", no_argument, 0, 'v' }, { "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, 'V' }, { 0, 0, 0, 0 },
	};
	/* the preset is applied first, whatever its place, so other options refine it */
	struct model_config c;
	memset(&c, 0, sizeof c);
	int have_family = 0, vocab_given = 0, head_dim_given = 0, shape_given = 0, bos_given = 0;
	prog = cli_init(argv[0], "[--preset NAME] [OPTION]... -o DIR");
	for (int i = 1; i < argc; i++) {
		const char *name = NULL;
		if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc)
			name = argv[i + 1];
		else if (strncmp(argv[i], "--preset=", 9) == 0)
			name = argv[i] + 9;
		if (name) {
			if (model_config_preset(name, &c) < 0)
				cli_bad_usage("unknown preset: %s", name);
			have_family = 1;
		}
	}
	const char *out = NULL, *tok = NULL;
	uint64_t seed = 0;
	enum st_dtype dtype = ST_F32;
	size_t shard = (size_t)5e9;   /* transformers' long-standing default max_shard_size */
	int verbose = 0, n_eos = -1, eos[MODEL_MAX_EOS];
	int o;
	while ((o = cli_getopt(argc, argv, "o:vhV", opts)) != -1) {
		switch (o) {
		case O_PRESET: break;
		case O_FAMILY: {
			enum model_family f;
			if (model_family_parse(optarg, &f) < 0)
				cli_bad_usage("unknown family (qwen2, qwen3, llama): %s", optarg);
			if (!have_family || c.family != f) {
				struct model_config keep = c;
				model_config_defaults(&c, f);
				c.C = keep.C, c.I = keep.I, c.L = keep.L, c.NH = keep.NH, c.NKV = keep.NKV, c.HS = keep.HS;
				c.V = keep.V, c.tied = have_family ? keep.tied : 1;
			}
			have_family = 1;
			break;
		}
		case O_HIDDEN: c.C = (int)cli_positive("--hidden", optarg, 1 << 20); shape_given = 1; break;
		case O_LAYERS: c.L = (int)cli_positive("--layers", optarg, 4096); break;
		case O_HEADS: c.NH = (int)cli_positive("--heads", optarg, 4096); shape_given = 1; break;
		case O_KV: c.NKV = (int)cli_positive("--kv-heads", optarg, 4096); break;
		case O_INTER: c.I = (int)cli_positive("--intermediate", optarg, 1 << 22); break;
		case O_VOCAB: c.V = (int)cli_positive("--vocab", optarg, 1 << 24); vocab_given = 1; break;
		case O_HEADDIM: c.HS = (int)cli_int("--head-dim", optarg, 2, 1 << 16); head_dim_given = 1; break;
		case O_THETA: c.rope_theta = cli_float("--rope-theta", optarg, 0, INFINITY, CLI_ABOVE_MIN); break;
		case O_EPS: c.eps = cli_float("--rms-eps", optarg, 0, INFINITY, CLI_ABOVE_MIN); break;
		case O_TIE: c.tied = 1; break;
		case O_NOTIE: c.tied = 0; break;
		case O_BOS: c.bos_id = (int)cli_uint("--bos", optarg, INT_MAX); bos_given = 1; break;
		case O_EOS:
			if (n_eos < 0)
				n_eos = 0;
			if (n_eos == MODEL_MAX_EOS)
				cli_bad_usage("too many --eos: %s", optarg);
			eos[n_eos++] = (int)cli_uint("--eos", optarg, INT_MAX);
			break;
		case O_TOK: tok = cli_path("--tokenizer", optarg); break;
		case O_SEED: seed = cli_uint("--seed", optarg, UINT64_MAX); break;
		case O_DTYPE:
			dtype = cli_word("--dtype", optarg, (const char *const[]){ "float32", "bfloat16", NULL }) ? ST_BF16 : ST_F32;
			break;
		case O_SHARD: shard = (size_t)cli_bytes("--shard-size", optarg, SIZE_MAX); break;
		case 'o': out = cli_dir(CLI_OUTPUT, optarg); break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, GRPO_VERSION); return 0;
		default: cli_usage_hint(); return 2;
		}
	}
	if (optind < argc)
		cli_bad_usage("unexpected argument: %s", argv[optind]);
	if (!out)
		cli_bad_usage("missing: -o DIR");
	if (!have_family)
		cli_bad_usage("missing: --family or --preset");
	if (n_eos >= 0) {
		c.n_eos = n_eos;
		memcpy(c.eos_ids, eos, sizeof eos);
	}
	if (!c.NKV)
		c.NKV = c.NH;
	/* head_dim follows hidden / heads unless given, or kept from a preset whose shape stands */
	if (!head_dim_given && c.NH && (c.HS == 0 || shape_given))
		c.HS = c.C / c.NH;

	if (access(out, F_OK) == 0)
		cli_die(CLI_EXIT_FAILURE, "%s: already exists", out);
	struct err e = { 0 };
	/* tokenizer_config.json beside tokenizer.json carries the chat template and special tokens */
	char side[4096];
	if (tok) {
		snprintf(side, sizeof side, "%s", tok);
		char *slash = strrchr(side, '/');
		snprintf(slash ? slash + 1 : side, sizeof side - (size_t)(slash ? slash + 1 - side : 0),
		         "tokenizer_config.json");
		struct tok_info ti;
		if (tokenizer_info(tok, side, &ti, &e) < 0)
			cli_die_err(&e);
		if (!vocab_given && c.V < ti.ids)
			c.V = (ti.ids + 63) / 64 * 64;   /* room for every id, padded as the Qwen checkpoints are */
		if (c.V < ti.ids)
			cli_die(CLI_EXIT_FAILURE, "%s: --vocab %d is smaller than the %d ids of the tokenizer", tok, c.V,
			        ti.ids);
		/* what neither the preset nor an option set comes from the tokenizer, so generation stops */
		if (c.bos_id < 0 && !bos_given)
			c.bos_id = ti.bos;
		if (c.n_eos == 0 && n_eos < 0) {
			c.n_eos = ti.n_eos;
			memcpy(c.eos_ids, ti.eos, sizeof ti.eos);
		}
	}
	if (model_config_check(&c, &e) < 0)
		cli_bad_usage("bad shape: %s", e.msg);

	/* DIR's parents are made (-o SPOOL/policy/step_0 in a new spool), and
	 * the temporary too, before the weights are drawn: a path that cannot
	 * be written fails at once, not after minutes and gigabytes */
	char parent[PATH_MAX];
	if (snprintf(parent, sizeof parent, "%s", out) >= (int)sizeof parent)
		cli_die(CLI_EXIT_FAILURE, "%s: path too long", out);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent && slash[1]) {   /* DIR/ is refused below, leaving nothing */
		*slash = '\0';
		if (fsys_mkdirs(parent, &e) < 0)
			cli_die_err(&e);
	}
	/* build in .DIR.tmp.UNIQUE beside DIR, then rename into place; a
	 * registered temporary (tempfile.h), so cli_die(), SIGINT, SIGTERM and
	 * SIGHUP remove it rather than leave hundreds of MB beside DIR */
	struct tempfile *t = tempfile_mkdir(out, NULL, &e);
	if (!t)
		cli_die_err(&e);

	struct model m;
	if (model_create(&m, &c, &e) < 0)
		cli_die_err(&e);
	if (model_init_random(&m, seed, &e) < 0)
		cli_die_err(&e);

	char path[4200];
	const char *tmp = tempfile_path(t);
	int r = model_write_dir(&m, tmp, dtype, shard, &e);
	if (r == 0 && tok) {
		snprintf(path, sizeof path, "%s/tokenizer.json", tmp);
		r = copy_file(tok, path, &e);
		if (r == 0 && access(side, R_OK) == 0) {
			snprintf(path, sizeof path, "%s/tokenizer_config.json", tmp);
			r = copy_file(side, path, &e);
		}
	}
	if (r < 0) {
		tempfile_delete(t);
		cli_die_err(&e);
	}
	r = tempfile_commit(t, 0, &e);
	if (r == 1)
		r = err_set(&e, "%s: already exists", out);
	if (r < 0)
		cli_die_err(&e);
	if (verbose)
		cli_warn("%s: %s, %zu parameters (%.1f MiB as %s), seed %llu", out,
		         model_family_name(c.family), m.w.n, m.w.n * (dtype == ST_F32 ? 4.0 : 2.0) / 1048576,
		         dtype == ST_F32 ? "float32" : "bfloat16", (unsigned long long)seed);
	model_free(&m);
	return 0;
}
