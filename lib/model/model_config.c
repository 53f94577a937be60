/* model_config.c: see model_config.h. */
#include "model/model_config.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/path.h"
#include "data/jsonview.h"

/*
 * What transformers' config class of each family takes for a key that
 * config.json leaves out (its dataclass defaults), so that a hand-written
 * config means here what it means to transformers and vLLM: 0 for kv heads
 * is "as many as the attention heads", for head_dim "hidden_size / heads",
 * -1 for bos and eos "none". An explicit null is none for bos and eos and
 * "as many as the heads" for kv heads in every family (__post_init__).
 */
static const struct {
	const char *name, *arch, *type;
	int kv_heads, head_dim, max_pos, bos, eos;
} families[] = {
	[MODEL_LLAMA] = { "llama", "LlamaForCausalLM", "llama", 0, 0, 2048, 1, 2 },
	[MODEL_QWEN2] = { "qwen2", "Qwen2ForCausalLM", "qwen2", 32, 0, 32768, -1, -1 },
	[MODEL_QWEN3] = { "qwen3", "Qwen3ForCausalLM", "qwen3", 32, 128, 32768, -1, -1 },
};

/*
 * Mistral's architecture is Llama's: transformers' MistralForCausalLM differs
 * only in its defaults (8 kv heads, 131072 positions), in having no bias
 * whatever attention_bias says, and in its sliding window. It loads as the
 * llama family, with those defaults; the window, which this implementation
 * does not do, must be null (Mistral v0.2 and later) or no shorter than the
 * model's positions, where it is never reached. config.json is kept as it
 * is, so a policy saved from it stays a Mistral.
 */
#define MISTRAL_ARCH "MistralForCausalLM"
#define MISTRAL_KV_HEADS 8
#define MISTRAL_MAX_POS 131072
#define MISTRAL_WINDOW 4096   /* MistralConfig's when config.json has no sliding_window */

const char *model_family_name(enum model_family f) { return families[f].name; }

int model_family_parse(const char *s, enum model_family *f)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, families[i].name) == 0) {
			*f = (enum model_family)i;
			return 0;
		}
	return -1;
}

void model_config_defaults(struct model_config *c, enum model_family f)
{
	c->family = f;
	c->eps = 1e-6f;
	c->rope_theta = f == MODEL_LLAMA ? 500000.0f : 1000000.0f;
	c->rope_llama3 = 0;
	c->rope_factor = 1;
	c->rope_low_freq = 1;
	c->rope_high_freq = 4;
	c->rope_orig_max = 8192;
	c->qkv_bias = f == MODEL_QWEN2;
	c->o_bias = 0;
	c->qk_norm = f == MODEL_QWEN3;
	c->bos_id = -1;
	c->n_eos = 0;
	c->max_pos = 32768;
	c->init_std = 0.02f;
}

int model_config_preset(const char *name, struct model_config *c)
{
	memset(c, 0, sizeof *c);
	if (strcmp(name, "tiny") == 0) {
		model_config_defaults(c, MODEL_QWEN2);
		c->C = 64, c->I = 128, c->L = 2, c->NH = 4, c->NKV = 2, c->HS = 16, c->V = 512;
	} else if (strcmp(name, "small") == 0) {
		model_config_defaults(c, MODEL_QWEN2);
		c->C = 256, c->I = 768, c->L = 4, c->NH = 4, c->NKV = 2, c->HS = 64, c->V = 8192;
	} else if (strcmp(name, "qwen2.5-0.5b") == 0) {
		model_config_defaults(c, MODEL_QWEN2);
		c->C = 896, c->I = 4864, c->L = 24, c->NH = 14, c->NKV = 2, c->HS = 64, c->V = 151936;
		c->bos_id = 151643, c->eos_ids[0] = 151645, c->n_eos = 1, c->max_pos = 32768;
	} else if (strcmp(name, "qwen2.5-1.5b") == 0) {
		model_config_defaults(c, MODEL_QWEN2);
		c->C = 1536, c->I = 8960, c->L = 28, c->NH = 12, c->NKV = 2, c->HS = 128, c->V = 151936;
		c->bos_id = 151643, c->eos_ids[0] = 151645, c->n_eos = 1, c->max_pos = 32768;
	} else if (strcmp(name, "qwen3-0.6b") == 0) {
		model_config_defaults(c, MODEL_QWEN3);
		c->C = 1024, c->I = 3072, c->L = 28, c->NH = 16, c->NKV = 8, c->HS = 128, c->V = 151936;
		c->bos_id = 151643, c->eos_ids[0] = 151645, c->n_eos = 1, c->max_pos = 40960;
	} else if (strcmp(name, "llama3.2-1b") == 0) {
		model_config_defaults(c, MODEL_LLAMA);
		c->C = 2048, c->I = 8192, c->L = 16, c->NH = 32, c->NKV = 8, c->HS = 64, c->V = 128256;
		c->eps = 1e-5f, c->rope_llama3 = 1, c->rope_factor = 32, c->rope_low_freq = 1, c->rope_high_freq = 4;
		c->rope_orig_max = 8192, c->max_pos = 131072;
		c->bos_id = 128000, c->eos_ids[0] = 128001, c->eos_ids[1] = 128008, c->eos_ids[2] = 128009, c->n_eos = 3;
	} else {
		return -1;
	}
	c->tied = 1;
	return 0;
}

int model_config_check(const struct model_config *c, struct err *e)
{
	if (c->C <= 0 || c->I <= 0 || c->L <= 0 || c->NH <= 0 || c->NKV <= 0 || c->HS <= 0 || c->V <= 0)
		return err_set(e, "sizes must be positive (hidden %d, intermediate %d, layers %d, heads %d, "
		               "kv heads %d, head_dim %d, vocab %d)", c->C, c->I, c->L, c->NH, c->NKV, c->HS, c->V);
	/* a size product must not overflow size_t anywhere: bound the whole model */
	double QD = (double)c->NH * c->HS, KD = (double)c->NKV * c->HS;
	double params = 2.0 * c->V * c->C + (double)c->L * (QD * c->C * 2 + KD * c->C * 2 + 3.0 * c->I * c->C);
	if (params > 1e13 || QD > 1 << 24 || c->I > 1 << 24 || c->C > 1 << 24)
		return err_set(e, "a model of %.3g parameters is beyond what this code handles", params);
	if (c->NH % c->NKV)
		return err_set(e, "num_attention_heads %d is not a multiple of num_key_value_heads %d", c->NH, c->NKV);
	if (c->HS % 2)
		return err_set(e, "head_dim %d is odd; RoPE needs an even head size", c->HS);
	if (!(c->eps > 0 && isfinite(c->eps)) || !(c->rope_theta > 0 && isfinite(c->rope_theta)))
		return err_set(e, "rms_norm_eps and rope_theta must be positive and finite");
	if (!(c->init_std >= 0 && isfinite(c->init_std)))
		return err_set(e, "initializer_range %g must be finite and not negative", c->init_std);
	if (c->rope_llama3 && !(c->rope_factor > 0 && c->rope_low_freq > 0 && c->rope_high_freq > c->rope_low_freq &&
	                        isfinite(c->rope_factor) && isfinite(c->rope_high_freq) && c->rope_orig_max > 0))
		return err_set(e, "llama3 rope scaling needs factor > 0 and high_freq_factor > low_freq_factor > 0");
	/* an id outside the embedding would be read out of bounds, or never sampled: generation would not stop */
	if (c->bos_id < -1 || c->bos_id >= c->V)
		return err_set(e, "bos_token_id %d is not in the vocabulary (vocab_size %d)", c->bos_id, c->V);
	if (c->n_eos < 0 || c->n_eos > MODEL_MAX_EOS)
		return err_set(e, "%d eos token ids (at most %d)", c->n_eos, MODEL_MAX_EOS);
	for (int i = 0; i < c->n_eos; i++)
		if (c->eos_ids[i] < 0 || c->eos_ids[i] >= c->V)
			return err_set(e, "eos_token_id %d is not in the vocabulary (vocab_size %d)", c->eos_ids[i], c->V);
	return 0;
}

/* 0 with the value in *out when v is a whole number that an int holds, else -1
 * (a double outside int's range must not be cast: that is undefined). */
static int int_of(const cJSON *v, int *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 2e9)
		return -1;
	*out = (int)v->valuedouble;
	return 0;
}

/* Whether key is in the object at all, null included. */
static int has_key(const cJSON *j, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(j, key) != NULL;
}

/* Integer field: required when def is NULL; null counts as absent. */
static int get_int(const cJSON *j, const char *key, const int *def, int *out, const char *name, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!v || cJSON_IsNull(v)) {
		if (!def)
			return err_set(e, "%s: missing %s", name, key);
		*out = *def;
		return 0;
	}
	if (int_of(v, out) < 0)
		return err_set(e, "%s: %s must be an integer", name, key);
	return 0;
}

static int get_float(const cJSON *j, const char *key, float def, float *out, const char *name, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v))
		return err_set(e, "%s: %s must be a number", name, key);
	if (!(fabs(v->valuedouble) <= FLT_MAX))
		return err_set(e, "%s: %s %g is beyond a 32-bit float", name, key, v->valuedouble);
	*out = (float)v->valuedouble;
	return 0;
}

static int get_bool(const cJSON *j, const char *key, int def, int *out, const char *name, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!v || cJSON_IsNull(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsBool(v))
		return err_set(e, "%s: %s must be true or false", name, key);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* Float field that must be present (transformers reads it with [], a KeyError when absent). */
static int need_float(const cJSON *j, const char *key, float *out, const char *what, const char *name, struct err *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (!v || cJSON_IsNull(v))
		return err_set(e, "%s: %s needs %s", name, what, key);
	return get_float(j, key, 0, out, name, e);
}

/*
 * rope settings from either schema: `r` is rope_parameters or rope_scaling
 * (may be NULL); c->rope_theta already holds the top-level rope_theta or the
 * default, which a rope_theta inside r replaces.
 */
static int parse_rope(const cJSON *r, struct model_config *c, const char *name, struct err *e)
{
	if (!r || cJSON_IsNull(r))
		return 0;
	if (!cJSON_IsObject(r))
		return err_set(e, "%s: rope settings must be an object", name);
	if (get_float(r, "rope_theta", c->rope_theta, &c->rope_theta, name, e) < 0)
		return -1;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "rope_type");
	if (!t)
		t = cJSON_GetObjectItemCaseSensitive(r, "type");
	const char *type = cJSON_IsString(t) ? t->valuestring : "default";
	if (strcmp(type, "default") == 0)
		return 0;
	if (strcmp(type, "llama3") != 0)
		return err_set(e, "%s: rope_type %s is not supported (default and llama3 are)", name, type);
	c->rope_llama3 = 1;
	/* transformers 5 fills a missing original_max_position_embeddings with
	 * max_position_embeddings (standardize_rope_params) and has no default for the rest */
	if (need_float(r, "factor", &c->rope_factor, "llama3 rope scaling", name, e) < 0 ||
	    need_float(r, "low_freq_factor", &c->rope_low_freq, "llama3 rope scaling", name, e) < 0 ||
	    need_float(r, "high_freq_factor", &c->rope_high_freq, "llama3 rope scaling", name, e) < 0 ||
	    get_int(r, "original_max_position_embeddings", &c->max_pos, &c->rope_orig_max, name, e) < 0)
		return -1;
	return 0;
}

/* eos_token_id: an integer, a list of at most MODEL_MAX_EOS, null or absent; appended to ids[*n]. */
static int parse_eos(const cJSON *eos, int *ids, int *n, const char *name, struct err *e)
{
	if (cJSON_IsNumber(eos)) {
		if (int_of(eos, &ids[(*n)++]) < 0)
			return err_set(e, "%s: eos_token_id %g is not a token id", name, eos->valuedouble);
	} else if (cJSON_IsArray(eos)) {
		const cJSON *x;
		int k = 0;
		cJSON_ArrayForEach(x, eos) {
			if (!cJSON_IsNumber(x) || k++ == MODEL_MAX_EOS)
				return err_set(e, "%s: eos_token_id: expected at most %d integers", name, MODEL_MAX_EOS);
			if (int_of(x, &ids[(*n)++]) < 0)
				return err_set(e, "%s: eos_token_id %g is not a token id", name, x->valuedouble);
		}
	} else if (eos && !cJSON_IsNull(eos)) {
		return err_set(e, "%s: eos_token_id must be an integer or a list", name);
	}
	return 0;
}

int model_config_parse(const char *json, size_t len, const char *name, struct model_config *c,
                       struct err *e)
{
	memset(c, 0, sizeof *c);
	cJSON *j = json_parse_n(json, len, NULL);
	if (!j && errno == ENOMEM)
		return err_sys(e, "%s", name);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return err_set(e, "%s: not a JSON object", name);
	}
	/* cJSON finds a key's first value, transformers (Python's json) its
	 * last: a config two readers load as two models is refused */
	if (json_duplicate_key(j, e) < 0) {
		cJSON_Delete(j);
		return err_prefix(e, "%s", name);
	}
	int r = -1;
	const cJSON *arch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "architectures"), 0);
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
	int fam = -1;
	for (int i = 0; i < 3; i++)
		if ((cJSON_IsString(arch) && strcmp(arch->valuestring, families[i].arch) == 0) ||
		    (!arch && cJSON_IsString(mt) && strcmp(mt->valuestring, families[i].type) == 0))
			fam = i;
	const int mistral = (cJSON_IsString(arch) && strcmp(arch->valuestring, MISTRAL_ARCH) == 0) ||
	                    (!arch && cJSON_IsString(mt) && strcmp(mt->valuestring, "mistral") == 0);
	if (mistral)
		fam = MODEL_LLAMA;
	if (fam < 0) {
		const char *what = cJSON_IsString(arch) ? arch->valuestring
		                 : cJSON_IsString(mt) ? mt->valuestring : "(none given)";
		err_set(e, "%s: unsupported architecture %s (supported: LlamaForCausalLM, MistralForCausalLM, "
		        "Qwen2ForCausalLM, Qwen3ForCausalLM)", name, what);
		goto out;
	}
	/* quantized weights would fail later, at a tensor name or dtype the
	 * loader does not know: say why here (a null is no quantization) */
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "quantization_config");
	if (q && !cJSON_IsNull(q)) {
		const cJSON *qm = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
		err_set(e, "%s: a quantized model (quantization_config%s%s): grpo-tools loads fp32, bf16 and fp16 "
		        "weights only", name, cJSON_IsString(qm) ? ", quant_method " : "",
		        cJSON_IsString(qm) ? qm->valuestring : "");
		goto out;
	}
	model_config_defaults(c, (enum model_family)fam);

	const int kv_default = has_key(j, "num_key_value_heads") ? 0 : mistral ? MISTRAL_KV_HEADS : families[fam].kv_heads;
	const int max_pos_default = mistral ? MISTRAL_MAX_POS : families[fam].max_pos;
	if (get_int(j, "hidden_size", NULL, &c->C, name, e) < 0 ||
	    get_int(j, "intermediate_size", NULL, &c->I, name, e) < 0 ||
	    get_int(j, "num_hidden_layers", NULL, &c->L, name, e) < 0 ||
	    get_int(j, "num_attention_heads", NULL, &c->NH, name, e) < 0 ||
	    get_int(j, "vocab_size", NULL, &c->V, name, e) < 0 ||
	    get_int(j, "num_key_value_heads", kv_default ? &kv_default : &c->NH, &c->NKV, name, e) < 0 ||
	    get_int(j, "max_position_embeddings", &max_pos_default, &c->max_pos, name, e) < 0)
		goto out;
	if (c->NH <= 0) {
		err_set(e, "%s: num_attention_heads must be positive", name);
		goto out;
	}
	if (kv_default && c->NH % kv_default != 0) {
		err_set(e, "%s: num_key_value_heads is missing, which %s takes as %d, and num_attention_heads %d "
		        "is not a multiple of it: give num_key_value_heads", name, mistral ? MISTRAL_ARCH : families[fam].arch,
		        kv_default, c->NH);
		goto out;
	}
	int hs = families[fam].head_dim ? families[fam].head_dim : c->C / c->NH;
	if (get_int(j, "head_dim", &hs, &c->HS, name, e) < 0 ||
	    get_float(j, "rms_norm_eps", c->eps, &c->eps, name, e) < 0 ||
	    get_float(j, "initializer_range", c->init_std, &c->init_std, name, e) < 0 ||
	    get_bool(j, "tie_word_embeddings", 0, &c->tied, name, e) < 0)
		goto out;

	/*
	 * RoPE: the newer rope_parameters wins, else rope_scaling. rope_theta
	 * comes from inside it, else from the top level, else 10000 in both
	 * schemas, as in transformers (4.x: the configs' rope_theta=10000.0;
	 * 5.x: RotaryEmbeddingConfigMixin.default_theta, for Llama and Qwen
	 * alike), never a family's usual value.
	 */
	const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "rope_parameters");
	if (!rp || cJSON_IsNull(rp))
		rp = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
	if (get_float(j, "rope_theta", 10000.0f, &c->rope_theta, name, e) < 0 || parse_rope(rp, c, name, e) < 0)
		goto out;

	int ab;
	if (get_bool(j, "attention_bias", 0, &ab, name, e) < 0)
		goto out;
	if (c->family == MODEL_QWEN2) {
		c->qkv_bias = 1;   /* hard-coded in transformers' Qwen2Attention */
		c->o_bias = 0;
	} else if (mistral) {
		c->qkv_bias = c->o_bias = 0;   /* MistralAttention has none, whatever attention_bias says */
	} else {
		c->qkv_bias = c->o_bias = ab;
	}

	/* fields this implementation does not do: refuse rather than run wrong */
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
	if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0)) {
		err_set(e, "%s: hidden_act %s is not supported (silu is)", name,
		        cJSON_IsString(act) ? act->valuestring : "(not a string)");
		goto out;
	}
	int flag;
	if (get_bool(j, "mlp_bias", 0, &flag, name, e) < 0)
		goto out;
	if (flag) {
		err_set(e, "%s: mlp_bias is not supported", name);
		goto out;
	}
	if (get_bool(j, "use_sliding_window", 0, &flag, name, e) < 0)
		goto out;
	if (flag) {
		err_set(e, "%s: use_sliding_window is not supported", name);
		goto out;
	}
	if (mistral) {
		int window = MISTRAL_WINDOW;
		const cJSON *sw = cJSON_GetObjectItemCaseSensitive(j, "sliding_window");
		if (cJSON_IsNull(sw))
			window = 0;
		else if (get_int(j, "sliding_window", &window, &window, name, e) < 0)
			goto out;
		if (window && window < c->max_pos) {
			err_set(e, "%s: sliding_window %d%s is not supported: attention here is over the whole sequence "
			        "(Mistral v0.2 and later have null; a window of max_position_embeddings, %d, or more "
			        "is never reached)", name, window, sw ? "" : ", as MistralForCausalLM takes it when missing,",
			        c->max_pos);
			goto out;
		}
	}
	const cJSON *lt;
	cJSON_ArrayForEach(lt, cJSON_GetObjectItemCaseSensitive(j, "layer_types"))
		if (!cJSON_IsString(lt) || strcmp(lt->valuestring, "full_attention") != 0) {
			err_set(e, "%s: layer_types: only full_attention is supported", name);
			goto out;
		}

	int bos = has_key(j, "bos_token_id") ? -1 : families[fam].bos;
	if (get_int(j, "bos_token_id", &bos, &c->bos_id, name, e) < 0)
		goto out;
	if (!has_key(j, "eos_token_id") && families[fam].eos >= 0)
		c->eos_ids[c->n_eos++] = families[fam].eos;
	else if (parse_eos(cJSON_GetObjectItemCaseSensitive(j, "eos_token_id"), c->eos_ids, &c->n_eos, name, e) < 0)
		goto out;
	if (model_config_check(c, e) < 0) {
		err_prefix(e, "%s", name);
		goto out;
	}
	r = 0;
out:
	cJSON_Delete(j);
	return r;
}

int model_config_load(const char *dir, struct model_config *c, struct err *e)
{
	char path[4096];
	if (path_join(path, sizeof path, dir, "config.json", e) < 0)
		return -1;
	struct buf b = { 0 };
	int r = buf_read_file(&b, path, e);
	if (r == 0)
		r = model_config_parse((const char *)b.data, b.len, path, c, e);
	buf_free(&b);
	return r;
}

int model_stop_ids_load(const char *dir, const struct model_config *c, int *ids, int *n, struct err *e)
{
	*n = 0;
	for (int i = 0; i < c->n_eos; i++)
		ids[(*n)++] = c->eos_ids[i];
	char path[4096];
	if (path_join(path, sizeof path, dir, "generation_config.json", e) < 0)
		return -1;
	struct stat st;
	if (stat(path, &st) != 0 && errno == ENOENT)
		return 0;
	struct buf b = { 0 };
	if (buf_read_file(&b, path, e) < 0)
		return -1;
	cJSON *j = json_parse_n((const char *)b.data, b.len, NULL);
	buf_free(&b);
	int g[MODEL_MAX_EOS], ng = 0, r = -1;
	if (!j && errno == ENOMEM)
		err_sys(e, "%s", path);
	else if (!cJSON_IsObject(j))
		err_set(e, "%s: not a JSON object", path);
	else if (json_duplicate_key(j, e) < 0)
		err_prefix(e, "%s", path);
	else if (parse_eos(cJSON_GetObjectItemCaseSensitive(j, "eos_token_id"), g, &ng, path, e) == 0)
		r = 0;
	cJSON_Delete(j);
	for (int i = 0; r == 0 && i < ng; i++) {
		if (g[i] < 0 || g[i] >= c->V)
			return err_set(e, "%s: eos_token_id %d is not in the vocabulary (vocab_size %d)", path, g[i],
			               c->V);
		int k = 0;
		while (k < *n && ids[k] != g[i])
			k++;
		if (k == *n)
			ids[(*n)++] = g[i];
	}
	return r;
}

/* The shortest decimal that reads back as the same float, always with a '.' or an exponent (1e-06, 1e+06, 32.0). */
static const char *fmt_float(char *s, size_t n, float v)
{
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(s, n, "%.*g", prec, (double)v);
		if (strtof(s, NULL) == v)
			break;
	}
	if (!strpbrk(s, ".eEn"))
		snprintf(s + strlen(s), n - strlen(s), ".0");
	return s;
}

int model_config_json(const struct model_config *c, const char *dtype, struct buf *b)
{
	char f1[32], f2[32], f3[32], f4[32];
	int fam = c->family;
	char rope[512];
	if (c->rope_llama3)
		snprintf(rope, sizeof rope,
		         "{\n    \"factor\": %s,\n    \"high_freq_factor\": %s,\n    \"low_freq_factor\": %s,\n"
		         "    \"original_max_position_embeddings\": %d,\n    \"rope_theta\": %s,\n"
		         "    \"rope_type\": \"llama3\"\n  }",
		         fmt_float(f1, sizeof f1, c->rope_factor), fmt_float(f2, sizeof f2, c->rope_high_freq),
		         fmt_float(f3, sizeof f3, c->rope_low_freq), c->rope_orig_max,
		         fmt_float(f4, sizeof f4, c->rope_theta));
	else
		snprintf(rope, sizeof rope, "{\n    \"rope_theta\": %s,\n    \"rope_type\": \"default\"\n  }",
		         fmt_float(f4, sizeof f4, c->rope_theta));
	char eos[128] = "null";
	if (c->n_eos == 1)
		snprintf(eos, sizeof eos, "%d", c->eos_ids[0]);
	else if (c->n_eos > 1) {
		size_t k = (size_t)snprintf(eos, sizeof eos, "[");
		for (int i = 0; i < c->n_eos && k < sizeof eos; i++)
			k += (size_t)snprintf(eos + k, sizeof eos - k, "%s%d", i ? ", " : "", c->eos_ids[i]);
		if (k < sizeof eos)
			snprintf(eos + k, sizeof eos - k, "]");
	}
	char bos[16] = "null";
	if (c->bos_id >= 0)
		snprintf(bos, sizeof bos, "%d", c->bos_id);
	int r = 0;
	r |= buf_printf(b, "{\n  \"architectures\": [\n    \"%s\"\n  ],\n", families[fam].arch);
	if (fam != MODEL_QWEN2)
		r |= buf_printf(b, "  \"attention_bias\": %s,\n", c->qkv_bias ? "true" : "false");
	r |= buf_printf(b,
	                "  \"attention_dropout\": 0.0,\n"
	                "  \"bos_token_id\": %s,\n"
	                "  \"dtype\": \"%s\",\n"
	                "  \"eos_token_id\": %s,\n"
	                "  \"head_dim\": %d,\n"
	                "  \"hidden_act\": \"silu\",\n"
	                "  \"hidden_size\": %d,\n"
	                "  \"initializer_range\": %s,\n"
	                "  \"intermediate_size\": %d,\n"
	                "  \"max_position_embeddings\": %d,\n",
	                bos, dtype, eos, c->HS, c->C, fmt_float(f1, sizeof f1, c->init_std), c->I, c->max_pos);
	if (fam != MODEL_LLAMA)
		r |= buf_printf(b, "  \"max_window_layers\": %d,\n", c->L);
	if (fam == MODEL_LLAMA)
		r |= buf_printf(b, "  \"mlp_bias\": false,\n");
	r |= buf_printf(b,
	                "  \"model_type\": \"%s\",\n"
	                "  \"num_attention_heads\": %d,\n"
	                "  \"num_hidden_layers\": %d,\n"
	                "  \"num_key_value_heads\": %d,\n"
	                "  \"rms_norm_eps\": %s,\n"
	                "  \"rope_parameters\": %s,\n"
	                "  \"rope_scaling\": %s,\n"
	                "  \"rope_theta\": %s,\n",
	                families[fam].type, c->NH, c->L, c->NKV, fmt_float(f2, sizeof f2, c->eps), rope,
	                c->rope_llama3 ? rope : "null", f4);
	if (fam != MODEL_LLAMA)
		r |= buf_printf(b, "  \"sliding_window\": null,\n");
	r |= buf_printf(b,
	                "  \"tie_word_embeddings\": %s,\n"
	                "  \"torch_dtype\": \"%s\",\n"
	                "  \"use_cache\": true,\n",
	                c->tied ? "true" : "false", dtype);
	if (fam != MODEL_LLAMA)
		r |= buf_printf(b, "  \"use_sliding_window\": false,\n");
	r |= buf_printf(b, "  \"vocab_size\": %d\n}\n", c->V);
	return r ? -1 : 0;
}
