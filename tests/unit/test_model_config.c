/*
 * test_model_config: config.json of each family in both schemas of
 * transformers (top-level rope_theta / rope_scaling, and rope_parameters),
 * the fields that change the math, the refusals, and the writer round trip.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"
#include "../tap.h"

static int parse(const char *json, struct model_config *c, struct err *e)
{
	return model_config_parse(json, strlen(json), "config.json", c, e);
}

#define SHAPE "\"hidden_size\": 96, \"intermediate_size\": 192, \"num_hidden_layers\": 2, " \
              "\"num_attention_heads\": 6, \"vocab_size\": 151936"
/* Qwen's config classes take a missing num_key_value_heads as 32, which 6 heads cannot share */
#define QSHAPE SHAPE ", \"num_key_value_heads\": 6"

/* The whole message of a refused config, or "(accepted)". */
static const char *refusal(const char *json)
{
	static struct err e;
	struct model_config c;
	memset(&e, 0, sizeof e);
	return parse(json, &c, &e) < 0 ? e.msg : "(accepted)";
}

#define REFUSED(json, want, what) do { \
	const char *got_ = refusal(json); \
	ok(strcmp(got_, want) == 0, "%s refused: %s", what, got_); \
} while (0)

#define LLAMA "{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE
#define QWEN2 "{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE
#define QWEN3 "{\"architectures\": [\"Qwen3ForCausalLM\"], " QSHAPE

/*
 * Keys left out take the defaults of transformers' config classes
 * (LlamaConfig, Qwen2Config, Qwen3Config: rms_norm_eps 1e-6,
 * initializer_range 0.02, tie_word_embeddings False, attention_bias False;
 * Qwen's bos and eos None, Qwen3's num_key_value_heads 32 and
 * max_position_embeddings 32768).
 */
static void test_defaults(void)
{
	struct model_config c;
	struct err e = { 0 };
	for (int f = 0; f < 3; f++) {
		const char *json[] = { LLAMA "}", QWEN2 "}", QWEN3 "}" };
		int r = parse(json[f], &c, &e);
		ok(r == 0 && c.eps == 1e-6f && c.init_std == 0.02f && !c.tied && !c.o_bias && !c.rope_llama3,
		   "%s without rms_norm_eps, initializer_range, tie_word_embeddings, attention_bias: 1e-6, 0.02, "
		   "untied, no o_proj bias, default rope", model_family_name((enum model_family)f));
		ok(r == 0 && c.qkv_bias == (f == MODEL_QWEN2) && c.qk_norm == (f == MODEL_QWEN3),
		   "%s: q/k/v bias only in qwen2, q/k norm only in qwen3", model_family_name((enum model_family)f));
	}
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 1024, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 2, \"num_attention_heads\": 64, \"vocab_size\": 512}", &c, &e) == 0 &&
	   c.NKV == 32 && c.max_pos == 32768 && c.bos_id == -1 && c.n_eos == 0,
	   "qwen3 without kv heads, max_position_embeddings, bos, eos: 32, 32768, none, none");
	ok(parse(QWEN2 ", \"attention_bias\": true}", &c, &e) == 0 && c.qkv_bias && !c.o_bias,
	   "qwen2 with attention_bias true: o_proj still has none (Qwen2Attention)");
	ok(parse(QWEN3 ", \"attention_bias\": true}", &c, &e) == 0 && c.qkv_bias && c.o_bias && c.qk_norm,
	   "qwen3 with attention_bias true: q/k/v and o bias");
	ok(parse(LLAMA ", \"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-05, \"initializer_range\": 0.01}", &c,
	         &e) == 0 && c.tied && c.eps == 1e-5f && c.init_std == 0.01f, "given values replace them");
	ok(parse("{\"model_type\": \"qwen3\", " QSHAPE "}", &c, &e) == 0 && c.family == MODEL_QWEN3 && c.HS == 128,
	   "no architectures: the family by model_type");
	ok(parse("{\"model_type\": \"llama\", " SHAPE "}", &c, &e) == 0 && c.family == MODEL_LLAMA && c.bos_id == 1,
	   "model_type llama");
	REFUSED("{\"architectures\": [\"GemmaForCausalLM\"], \"model_type\": \"llama\", " SHAPE "}",
	        "config.json: unsupported architecture GemmaForCausalLM (supported: LlamaForCausalLM, "
	        "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)", "an unknown architecture with model_type llama");
	REFUSED("{" SHAPE "}", "config.json: unsupported architecture (none given) (supported: LlamaForCausalLM, "
	        "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)", "neither architectures nor model_type");

	enum model_family fam = MODEL_LLAMA;
	ok(model_family_parse("qwen3", &fam) == 0 && fam == MODEL_QWEN3 && model_family_parse("qwen2", &fam) == 0 &&
	   fam == MODEL_QWEN2 && model_family_parse("llama", &fam) == 0 && fam == MODEL_LLAMA,
	   "family names parse");
	ok(model_family_parse("mistral", &fam) == -1 && fam == MODEL_LLAMA, "an unknown family name is -1");
	ok(!strcmp(model_family_name(MODEL_QWEN2), "qwen2") && !strcmp(model_family_name(MODEL_QWEN3), "qwen3") &&
	   !strcmp(model_family_name(MODEL_LLAMA), "llama"), "family names");
}

/* RoPE: rope_parameters before rope_scaling, rope_type before type, llama3's four parameters in their fields. */
static void test_rope(void)
{
	struct model_config c;
	struct err e = { 0 };
	const char *l3 = "{\"rope_type\": \"llama3\", \"factor\": 16.0, \"low_freq_factor\": 2.0, "
	                 "\"high_freq_factor\": 8.0, \"original_max_position_embeddings\": 4096}";
	char json[1024];
	snprintf(json, sizeof json, LLAMA ", \"rope_scaling\": %s}", l3);
	ok(parse(json, &c, &e) == 0 && c.rope_llama3 && c.rope_factor == 16 && c.rope_low_freq == 2 &&
	   c.rope_high_freq == 8 && c.rope_orig_max == 4096 && c.rope_theta == 10000,
	   "llama3: factor, low_freq_factor, high_freq_factor, original_max_position_embeddings each in its field");
	snprintf(json, sizeof json, LLAMA ", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1e6}, "
	         "\"rope_scaling\": %s}", l3);
	ok(parse(json, &c, &e) == 0 && !c.rope_llama3 && c.rope_theta == 1e6f,
	   "rope_parameters wins over rope_scaling");
	snprintf(json, sizeof json, LLAMA ", \"rope_parameters\": null, \"rope_scaling\": %s}", l3);
	ok(parse(json, &c, &e) == 0 && c.rope_llama3 && c.rope_factor == 16, "a null rope_parameters: rope_scaling");
	ok(parse(LLAMA ", \"rope_theta\": 5e5, \"rope_scaling\": null}", &c, &e) == 0 && !c.rope_llama3 &&
	   c.rope_theta == 5e5f, "a null rope_scaling: default rope, the top-level theta");
	ok(parse(LLAMA ", \"rope_scaling\": {\"rope_type\": \"default\", \"type\": \"llama3\"}}", &c, &e) == 0 &&
	   !c.rope_llama3, "rope_type wins over type, as transformers reads them");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}}",
	        "config.json: rope_type yarn is not supported (default and llama3 are)", "yarn");
	REFUSED(LLAMA ", \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4.0}}",
	        "config.json: rope_type dynamic is not supported (default and llama3 are)", "dynamic by 'type'");
	REFUSED(LLAMA ", \"rope_parameters\": [1]}", "config.json: rope settings must be an object", "a rope list");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"high_freq_factor\": 4.0}}",
	        "config.json: llama3 rope scaling needs low_freq_factor", "llama3 without low_freq_factor");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0}}",
	        "config.json: llama3 rope scaling needs high_freq_factor", "llama3 without high_freq_factor");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 4.0, "
	        "\"high_freq_factor\": 4.0}}", "config.json: llama3 rope scaling needs factor > 0 and high_freq_factor > "
	        "low_freq_factor > 0", "llama3 with high_freq_factor == low_freq_factor (transformers refuses it)");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0, \"low_freq_factor\": 1.0, "
	        "\"high_freq_factor\": 4.0}}", "config.json: llama3 rope scaling needs factor > 0 and high_freq_factor > "
	        "low_freq_factor > 0", "llama3 with factor 0");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 0, "
	        "\"high_freq_factor\": 4.0}}", "config.json: llama3 rope scaling needs factor > 0 and high_freq_factor > "
	        "low_freq_factor > 0", "llama3 with low_freq_factor 0");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
	        "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 0}}", "config.json: llama3 rope scaling "
	        "needs factor > 0 and high_freq_factor > low_freq_factor > 0", "llama3 with original max 0");
	REFUSED(LLAMA ", \"rope_theta\": 0}", "config.json: rms_norm_eps and rope_theta must be positive and finite",
	        "rope_theta 0");
	REFUSED(LLAMA ", \"rms_norm_eps\": 0}", "config.json: rms_norm_eps and rope_theta must be positive and finite",
	        "rms_norm_eps 0");
	ok(parse(LLAMA ", \"rms_norm_eps\": 1e-45}", &c, &e) == 0 && c.eps > 0, "the least float eps loads");
}

/* Each refusal by its whole message, naming the field. */
static void test_refusals(void)
{
	REFUSED(LLAMA ", \"hidden_act\": \"gelu\"}", "config.json: hidden_act gelu is not supported (silu is)", "gelu");
	REFUSED(LLAMA ", \"hidden_act\": 1}", "config.json: hidden_act (not a string) is not supported (silu is)",
	        "a numeric hidden_act");
	ok(!strcmp(refusal(LLAMA ", \"hidden_act\": \"silu\", \"mlp_bias\": false, \"use_sliding_window\": false}"),
	           "(accepted)"), "silu, mlp_bias false, use_sliding_window false load");
	REFUSED(LLAMA ", \"mlp_bias\": true}", "config.json: mlp_bias is not supported", "mlp_bias");
	REFUSED(LLAMA ", \"mlp_bias\": 0}", "config.json: mlp_bias must be true or false", "a numeric mlp_bias");
	REFUSED(QWEN2 ", \"use_sliding_window\": true}", "config.json: use_sliding_window is not supported", "a window");
	REFUSED(QWEN2 ", \"use_sliding_window\": \"no\"}", "config.json: use_sliding_window must be true or false",
	        "a string use_sliding_window");
	REFUSED(QWEN3 ", \"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
	        "config.json: layer_types: only full_attention is supported", "a sliding layer");
	REFUSED(QWEN3 ", \"layer_types\": [\"full_attention\", 1]}",
	        "config.json: layer_types: only full_attention is supported", "a numeric layer type");
	REFUSED(LLAMA ", \"attention_bias\": 1}", "config.json: attention_bias must be true or false", "attention_bias 1");
	REFUSED(LLAMA ", \"tie_word_embeddings\": \"true\"}", "config.json: tie_word_embeddings must be true or false",
	        "a string tie_word_embeddings");
	REFUSED(LLAMA ", \"head_dim\": 16.5}", "config.json: head_dim must be an integer", "a fractional head_dim");
	REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": \"96\", \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"vocab_size\": 384}",
	        "config.json: hidden_size must be an integer", "a string hidden_size");
	REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6}", "config.json: missing vocab_size", "no vocab_size");
	REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 0, \"vocab_size\": 384}",
	        "config.json: num_attention_heads must be positive", "no heads");
	REFUSED(LLAMA ", \"rms_norm_eps\": \"1e-6\"}", "config.json: rms_norm_eps must be a number", "a string eps");
	REFUSED(LLAMA ", \"head_dim\": 15}", "config.json: head_dim 15 is odd; RoPE needs an even head size", "odd head_dim");
	REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 0, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"vocab_size\": 384}",
	        "config.json: sizes must be positive (hidden 96, intermediate 0, layers 2, heads 6, kv heads 6, "
	        "head_dim 16, vocab 384)", "intermediate_size 0");
	REFUSED("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 10000, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 10, \"vocab_size\": 1000000000}",
	        "config.json: a model of 2e+13 parameters is beyond what this code handles", "2e13 parameters");
	REFUSED(LLAMA ", \"initializer_range\": -0.02}",
	        "config.json: initializer_range -0.02 must be finite and not negative", "a negative initializer_range");
	REFUSED(LLAMA ", \"bos_token_id\": -2}", "config.json: bos_token_id -2 is not in the vocabulary (vocab_size 151936)",
	        "bos -2");
	REFUSED(LLAMA ", \"eos_token_id\": 151936}",
	        "config.json: eos_token_id 151936 is not in the vocabulary (vocab_size 151936)", "eos at vocab_size");
	REFUSED(LLAMA ", \"eos_token_id\": \"2\"}", "config.json: eos_token_id must be an integer or a list",
	        "a string eos_token_id");
	REFUSED(LLAMA ", \"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}",
	        "config.json: eos_token_id: expected at most 8 integers", "9 eos ids");
	REFUSED(LLAMA ", \"eos_token_id\": [1, \"2\"]}", "config.json: eos_token_id: expected at most 8 integers",
	        "a string in the eos list");
	REFUSED("{\"architectures\": [\"MistralForCausalLM\"], " QSHAPE ", \"max_position_embeddings\": 4097, "
	        "\"sliding_window\": 4096}", "config.json: sliding_window 4096 is not supported: attention here is over the "
	        "whole sequence (Mistral v0.2 and later have null; a window of max_position_embeddings, 4097, or more is "
	        "never reached)", "a mistral window one short of its positions");

	struct model_config c;
	struct err e = { 0 };
	ok(parse(LLAMA ", \"bos_token_id\": 0, \"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 151935]}", &c, &e) == 0 &&
	   c.bos_id == 0 && c.n_eos == MODEL_MAX_EOS && c.eos_ids[0] == 1 && c.eos_ids[6] == 7 &&
	   c.eos_ids[7] == 151935, "MODEL_MAX_EOS eos ids, the last the vocabulary's last; bos 0");
	ok(parse(LLAMA ", \"eos_token_id\": 0}", &c, &e) == 0 && c.n_eos == 1 && c.eos_ids[0] == 0,
	   "eos as a number, 0");
	ok(parse(LLAMA ", \"eos_token_id\": []}", &c, &e) == 0 && c.n_eos == 0, "an empty eos list: none");
}

/* model_config_check's sizes: each positive, and the whole model within 1e13 parameters. */
static void test_sizes(void)
{
	struct model_config c;
	struct err e = { 0 };
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], " SHAPE ", \"num_key_value_heads\": 0}", "config.json: sizes must be positive (hidden 96, intermediate 192, "
	        "layers 2, heads 6, kv heads 0, head_dim 16, vocab 151936)", "num_key_value_heads 0");
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 0, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"head_dim\": 16, "
	        "\"vocab_size\": 384}", "config.json: sizes must be positive (hidden 0, intermediate 192, layers 2, "
	        "heads 6, kv heads 6, head_dim 16, vocab 384)", "hidden_size 0");
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"vocab_size\": 0}",
	        "config.json: sizes must be positive (hidden 96, intermediate 192, layers 2, heads 6, kv heads 6, "
	        "head_dim 16, vocab 0)", "vocab_size 0");
	REFUSED(QWEN2 ", \"head_dim\": 0}", "config.json: sizes must be positive (hidden 96, intermediate 192, layers 2, "
	        "heads 6, kv heads 6, head_dim 0, vocab 151936)", "head_dim 0");
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 1, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"vocab_size\": 384}",
	         &c, &e) == 0 && c.L == 1, "one layer loads");
	/* 2·V·C + L·(2·NH·HS·C + 2·NKV·HS·C + 3·I·C): here 24000 layers of 7e8 */
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 10000, \"intermediate_size\": 10000, "
	        "\"num_hidden_layers\": 24000, \"num_attention_heads\": 10, \"num_key_value_heads\": 10, "
	        "\"vocab_size\": 2}", "config.json: a model of 1.68e+13 parameters is beyond what this code handles",
	        "1.68e13 parameters in the layers");
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 2, \"intermediate_size\": 16777217, "
	        "\"num_hidden_layers\": 1, \"num_attention_heads\": 1, \"num_key_value_heads\": 1, \"vocab_size\": 1}",
	        "config.json: a model of 1.01e+08 parameters is beyond what this code handles",
	        "an intermediate_size over 2^24, in a small model");
	REFUSED("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	        "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"vocab_size\": 384",
	        "config.json: not a JSON object", "text that is not JSON");
	model_config_preset("tiny", &c);
	c.n_eos = MODEL_MAX_EOS + 1;
	ok(model_config_check(&c, &e) < 0 &&
	   !strcmp(e.msg, "9 eos token ids (at most 8)"), "model_config_check: more than MODEL_MAX_EOS eos ids: %s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 10000, \"intermediate_size\": 1, "
	         "\"num_hidden_layers\": 1, \"num_attention_heads\": 10, \"num_key_value_heads\": 10, "
	         "\"vocab_size\": 450000000}", &c, &e) == 0, "9e12 parameters in the embeddings load (%s)", e.msg);
}

/* generation_config.json's eos ids join config.json's, each once. */
static void test_stop_ids(void)
{
	char dir[] = "/tmp/test_model_config_XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	struct model_config c;
	struct err e = { 0 };
	int ids[MODEL_MAX_STOP], n = -1;
	parse(LLAMA ", \"eos_token_id\": [7, 9]}", &c, &e);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) == 0 && n == 2 && ids[0] == 7 && ids[1] == 9,
	   "no generation_config.json: config.json's eos ids");
	shell("printf '{\"eos_token_id\": [9, 11, 7, 12]}' > %s/generation_config.json", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) == 0 && n == 4 && ids[0] == 7 && ids[1] == 9 && ids[2] == 11 &&
	   ids[3] == 12, "a list: the new ids after config.json's, each once (%d)", n);
	shell("printf '{\"eos_token_id\": 0}' > %s/generation_config.json", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) == 0 && n == 3 && ids[2] == 0, "a number, 0");
	shell("printf '{\"bos_token_id\": 1}' > %s/generation_config.json", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) == 0 && n == 2, "no eos_token_id there");
	char want[256];
	shell("printf '{\"eos_token_id\": 5, \"eos_token_id\": 6}' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: the key \"eos_token_id\" appears twice in one object",
		 dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want),
	   "a key twice (transformers would take the last, cJSON the first): %s", e.msg);
	shell("printf '{\"eos_token_id\": [9, 151936]}' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: eos_token_id 151936 is not in the vocabulary "
	         "(vocab_size 151936)", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want), "an id past the vocabulary: %s", e.msg);
	shell("printf '{\"eos_token_id\": -1}' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: eos_token_id -1 is not in the vocabulary "
	         "(vocab_size 151936)", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want), "a negative id: %s", e.msg);
	shell("printf '{\"eos_token_id\": [2' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: not a JSON object", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want), "not JSON: %s", e.msg);
	shell("printf '[2]' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: not a JSON object", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want), "not an object: %s", e.msg);
	shell("printf '{\"eos_token_id\": \"2\"}' > %s/generation_config.json", dir);
	snprintf(want, sizeof want, "%s/generation_config.json: eos_token_id must be an integer or a list", dir);
	ok(model_stop_ids_load(dir, &c, ids, &n, &e) < 0 && !strcmp(e.msg, want), "a string: %s", e.msg);
	shell("rm -rf '%s'", dir);
	char longdir[4100];
	memset(longdir, 'd', sizeof longdir - 1);
	longdir[sizeof longdir - 1] = '\0';
	longdir[0] = '/';
	ok(model_stop_ids_load(longdir, &c, ids, &n, &e) < 0 && strstr(e.msg, "/generation_config.json: path too long"),
	   "a directory whose generation_config.json path does not fit is refused: %s", e.msg);
}

/*
 * The written config.json, exactly: the presets' values are those of the
 * checkpoints' own config.json (Llama-3.2-1B, Qwen2.5-0.5B-Instruct) in
 * transformers 5's sorted, indented form, but for two spellings Python's
 * json module reads as the same values: a list on one line, and 1e+06
 * where Python writes 1000000.0.
 */
static const char llama_json[] =
	"{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n"
	"  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n  \"bos_token_id\": 128000,\n"
	"  \"dtype\": \"bfloat16\",\n  \"eos_token_id\": [128001, 128008, 128009],\n  \"head_dim\": 64,\n"
	"  \"hidden_act\": \"silu\",\n  \"hidden_size\": 2048,\n  \"initializer_range\": 0.02,\n"
	"  \"intermediate_size\": 8192,\n  \"max_position_embeddings\": 131072,\n  \"mlp_bias\": false,\n"
	"  \"model_type\": \"llama\",\n  \"num_attention_heads\": 32,\n  \"num_hidden_layers\": 16,\n"
	"  \"num_key_value_heads\": 8,\n  \"rms_norm_eps\": 1e-05,\n"
	"  \"rope_parameters\": {\n    \"factor\": 32.0,\n    \"high_freq_factor\": 4.0,\n    \"low_freq_factor\": 1.0,\n"
	"    \"original_max_position_embeddings\": 8192,\n    \"rope_theta\": 500000.0,\n    \"rope_type\": \"llama3\"\n  },\n"
	"  \"rope_scaling\": {\n    \"factor\": 32.0,\n    \"high_freq_factor\": 4.0,\n    \"low_freq_factor\": 1.0,\n"
	"    \"original_max_position_embeddings\": 8192,\n    \"rope_theta\": 500000.0,\n    \"rope_type\": \"llama3\"\n  },\n"
	"  \"rope_theta\": 500000.0,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"bfloat16\",\n"
	"  \"use_cache\": true,\n  \"vocab_size\": 128256\n}\n";

static const char qwen2_json[] =
	"{\n  \"architectures\": [\n    \"Qwen2ForCausalLM\"\n  ],\n"
	"  \"attention_dropout\": 0.0,\n  \"bos_token_id\": 151643,\n"
	"  \"dtype\": \"float32\",\n  \"eos_token_id\": 151645,\n  \"head_dim\": 64,\n"
	"  \"hidden_act\": \"silu\",\n  \"hidden_size\": 896,\n  \"initializer_range\": 0.02,\n"
	"  \"intermediate_size\": 4864,\n  \"max_position_embeddings\": 32768,\n  \"max_window_layers\": 24,\n"
	"  \"model_type\": \"qwen2\",\n  \"num_attention_heads\": 14,\n  \"num_hidden_layers\": 24,\n"
	"  \"num_key_value_heads\": 2,\n  \"rms_norm_eps\": 1e-06,\n"
	"  \"rope_parameters\": {\n    \"rope_theta\": 1e+06,\n    \"rope_type\": \"default\"\n  },\n"
	"  \"rope_scaling\": null,\n  \"rope_theta\": 1e+06,\n  \"sliding_window\": null,\n"
	"  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\",\n  \"use_cache\": true,\n"
	"  \"use_sliding_window\": false,\n  \"vocab_size\": 151936\n}\n";

static void test_written(void)
{
	const struct { const char *preset, *dtype, *want; } cases[] = {
		{ "llama3.2-1b", "bfloat16", llama_json },
		{ "qwen2.5-0.5b", "float32", qwen2_json },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct model_config c, back;
		struct buf b = { 0 };
		struct err e = { 0 };
		ok(model_config_preset(cases[i].preset, &c) == 0 && model_config_json(&c, cases[i].dtype, &b) == 0,
		   "%s: written", cases[i].preset);
		if (!ok(b.len == strlen(cases[i].want) && memcmp(b.data, cases[i].want, b.len) == 0,
		        "%s: config.json exactly as transformers 5 writes it", cases[i].preset))
			diag("%.*s", (int)b.len, b.data);
		ok(model_config_parse((const char *)b.data, b.len, "w", &back, &e) == 0 &&
		   memcmp(&back, &c, sizeof c) == 0, "%s: reads back the same (%s)", cases[i].preset, e.msg);
		buf_free(&b);
	}
	struct model_config c;
	struct buf b = { 0 };
	ok(model_config_preset("qwen3-0.6b", &c) == 0 && model_config_json(&c, "bfloat16", &b) == 0 &&
	   strstr((const char *)b.data, "\"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n") &&
	   strstr((const char *)b.data, "\"head_dim\": 128,") && strstr((const char *)b.data, "\"max_window_layers\": 28,") &&
	   strstr((const char *)b.data, "\"max_position_embeddings\": 40960,") &&
	   strstr((const char *)b.data, "\"num_key_value_heads\": 8,") &&
	   strstr((const char *)b.data, "\"model_type\": \"qwen3\","), "qwen3-0.6b: its config's values");
	buf_free(&b);
	c.bos_id = -1, c.n_eos = 0, c.qkv_bias = c.o_bias = 1;
	ok(model_config_json(&c, "float32", &b) == 0 && strstr((const char *)b.data, "\"bos_token_id\": null,") &&
	   strstr((const char *)b.data, "\"eos_token_id\": null,") && strstr((const char *)b.data, "\"attention_bias\": true,"),
	   "no bos, no eos: null; attention_bias true");
	buf_free(&b);
	ok(model_config_preset("medium", &c) == -1, "an unknown preset is -1");
}

/*
 * The other presets: tiny and small as model_config.h describes them, the
 * real ones with the values of Qwen2.5-1.5B's and Qwen3-0.6B's config.json.
 */
static void test_presets(void)
{
	struct model_config c;
	struct err e = { 0 };
	ok(model_config_preset("tiny", &c) == 0 && model_config_check(&c, &e) == 0 && c.family == MODEL_QWEN2 &&
	   c.C == 64 && c.L == 2 && c.V == 512 && c.tied && c.qkv_bias, "tiny: qwen2, hidden 64, 2 layers, vocab 512");
	ok(model_config_preset("small", &c) == 0 && model_config_check(&c, &e) == 0 && c.family == MODEL_QWEN2 &&
	   c.C == 256 && c.L == 4 && c.V == 8192 && c.tied, "small: qwen2, hidden 256, 4 layers, vocab 8192");
	ok(model_config_preset("qwen2.5-1.5b", &c) == 0 && model_config_check(&c, &e) == 0 && c.family == MODEL_QWEN2 &&
	   c.C == 1536 && c.I == 8960 && c.L == 28 && c.NH == 12 && c.NKV == 2 && c.HS == 128 && c.V == 151936 &&
	   c.eps == 1e-6f && c.rope_theta == 1e6f && !c.rope_llama3 && c.tied && c.qkv_bias && !c.o_bias &&
	   !c.qk_norm && c.bos_id == 151643 && c.n_eos == 1 && c.eos_ids[0] == 151645 && c.max_pos == 32768,
	   "qwen2.5-1.5b: its config.json's values");
	ok(model_config_preset("qwen3-0.6b", &c) == 0 && model_config_check(&c, &e) == 0 && c.family == MODEL_QWEN3 &&
	   c.C == 1024 && c.I == 3072 && c.L == 28 && c.NH == 16 && c.NKV == 8 && c.HS == 128 && c.V == 151936 &&
	   c.eps == 1e-6f && c.rope_theta == 1e6f && !c.rope_llama3 && c.tied && !c.qkv_bias && !c.o_bias &&
	   c.qk_norm && c.bos_id == 151643 && c.n_eos == 1 && c.eos_ids[0] == 151645 && c.max_pos == 40960 &&
	   c.init_std == 0.02f, "qwen3-0.6b: its config.json's values");
}

int main(void)
{
	struct model_config c;
	struct err e = { 0 };

	/* a key given twice: transformers reads the last value, cJSON the first */
	REFUSED(LLAMA ", \"num_hidden_layers\": 4}",
		"config.json: the key \"num_hidden_layers\" appears twice in one object", "a size twice");
	REFUSED(LLAMA ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"factor\": 32.0, "
		"\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}}",
		"config.json: the key \"factor\" appears twice in one object", "a key twice inside rope_scaling");

	/* Qwen2, old schema: q/k/v bias without a key, head_dim derived */
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"rope_theta\": 1000000.0, "
	         "\"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-06, \"eos_token_id\": 151643, "
	         "\"bos_token_id\": 151643, \"use_sliding_window\": false, \"sliding_window\": 32768, "
	         "\"torch_dtype\": \"bfloat16\"}", &c, &e) == 0, "qwen2, old schema");
	ok(c.family == MODEL_QWEN2 && c.C == 96 && c.I == 192 && c.L == 2 && c.NH == 6 && c.NKV == 6 && c.HS == 16 &&
	   c.V == 151936, "qwen2 shape, head_dim 96/6");
	ok(c.qkv_bias && !c.o_bias && !c.qk_norm && c.tied, "qwen2: q/k/v bias, no o bias, no q/k norm, tied");
	ok(c.rope_theta == 1e6f && !c.rope_llama3 && c.eps == 1e-6f, "qwen2: theta 1e6, eps 1e-6");
	ok(c.n_eos == 1 && c.eos_ids[0] == 151643 && c.bos_id == 151643, "eos and bos ids");

	/* Qwen3, new schema, head_dim differing from hidden / heads */
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " SHAPE ", \"num_key_value_heads\": 3, "
	         "\"head_dim\": 24, \"attention_bias\": false, \"rope_parameters\": {\"rope_theta\": 1000000.0, "
	         "\"rope_type\": \"default\"}, \"layer_types\": [\"full_attention\", \"full_attention\"], "
	         "\"eos_token_id\": null, \"bos_token_id\": null}", &c, &e) == 0, "qwen3, rope_parameters");
	ok(c.family == MODEL_QWEN3 && c.HS == 24 && c.NKV == 3 && c.qk_norm && !c.qkv_bias && !c.tied,
	   "qwen3: head_dim 24, q/k norm, no bias, untied by default");
	ok(c.rope_theta == 1e6f && c.n_eos == 0 && c.bos_id == -1, "qwen3: theta from rope_parameters; no eos, no bos");

	/* Llama 3 scaling in both schemas gives the same config */
	struct model_config c_old, c_new;
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_theta\": 500000.0, "
	         "\"rope_scaling\": {\"type\": \"llama3\", \"factor\": 32.0, \"low_freq_factor\": 1.0, "
	         "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}, "
	         "\"eos_token_id\": [128001, 128008, 128009], \"attention_bias\": true}", &c_old, &e) == 0,
	   "llama, rope_scaling with 'type'");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_parameters\": {\"rope_theta\": 500000.0, "
	         "\"rope_type\": \"llama3\", \"factor\": 32.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
	         "\"original_max_position_embeddings\": 8192}, \"eos_token_id\": [128001, 128008, 128009], "
	         "\"attention_bias\": true}", &c_new, &e) == 0, "llama, rope_parameters");
	ok(c_old.rope_llama3 && c_old.rope_factor == 32 && c_old.rope_high_freq == 4 && c_old.rope_orig_max == 8192 &&
	   c_old.rope_theta == 5e5f, "llama3 scaling read from rope_scaling");
	ok(memcmp(&c_old, &c_new, sizeof c_old) == 0, "both schemas give the same config");
	ok(c_new.n_eos == 3 && c_new.eos_ids[2] == 128009, "eos list of 3");
	ok(c_new.qkv_bias && c_new.o_bias, "llama attention_bias: q/k/v/o bias");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE "}", &c, &e) == 0 && c.rope_theta == 10000.0f,
	   "llama without rope settings: theta 10000");

	/* a rope_theta missing is 10000 in both schemas, as transformers has it (4.x configs, 5.x default_theta) */
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " QSHAPE ", \"rope_parameters\": {\"rope_type\": "
	         "\"default\"}}", &c, &e) == 0 && c.rope_theta == 10000.0f,
	   "qwen3: rope_parameters without rope_theta: 10000, not Qwen's usual 1e6");
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " QSHAPE "}", &c, &e) == 0 && c.rope_theta == 10000.0f,
	   "qwen3: old schema without rope_theta: 10000 too");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_parameters\": {\"rope_type\": "
	         "\"default\"}}", &c, &e) == 0 && c.rope_theta == 10000.0f,
	   "llama: rope_parameters without rope_theta: 10000, not Llama 3's usual 5e5");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_theta\": 250000.0, "
	         "\"rope_parameters\": {\"rope_type\": \"default\"}}", &c, &e) == 0 && c.rope_theta == 250000.0f,
	   "rope_parameters without rope_theta takes the top-level one");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_theta\": 250000.0, "
	         "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 7.0}}", &c, &e) == 0 &&
	   c.rope_theta == 7.0f, "and one inside rope_parameters wins");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"max_position_embeddings\": 4096, "
	         "\"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
	         "\"high_freq_factor\": 4.0}}", &c, &e) == 0 && c.rope_orig_max == 4096,
	   "llama3 without original_max_position_embeddings: max_position_embeddings (transformers 5)");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_scaling\": {\"rope_type\": "
	         "\"llama3\", \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}}", &c, &e) < 0 &&
	   strstr(e.msg, "needs factor"), "llama3 without factor is refused, not guessed: %s", e.msg);

	/*
	 * keys left out mean what transformers' config classes default them to,
	 * not a family's usual value: a hand-written config must load here as in
	 * transformers and vLLM
	 */
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 1024, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 2, \"num_attention_heads\": 64, \"vocab_size\": 512}", &c, &e) == 0 &&
	   c.NKV == 32 && c.HS == 16 && c.max_pos == 32768 && c.bos_id == -1 && c.n_eos == 0,
	   "qwen2 without num_key_value_heads: 32 kv heads; no bos, no eos");
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " SHAPE ", \"num_key_value_heads\": null}", &c, &e) == 0 &&
	   c.NKV == 6, "num_key_value_heads null: as many as the heads");
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " SHAPE "}", &c, &e) < 0 &&
	   strstr(e.msg, "num_key_value_heads is missing, which Qwen2ForCausalLM takes as 32, and num_attention_heads 6 "
	          "is not a multiple of it"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " SHAPE ", \"num_key_value_heads\": 3}", &c, &e) == 0 &&
	   c.HS == 128, "qwen3 without head_dim: 128, not hidden_size / heads (16)");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE "}", &c, &e) == 0 && c.NKV == 6 && c.HS == 16 &&
	   c.max_pos == 2048 && c.bos_id == 1 && c.n_eos == 1 && c.eos_ids[0] == 2,
	   "llama without kv heads, head_dim, max_position_embeddings, bos, eos: 6, 16, 2048, 1, 2");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"bos_token_id\": null, "
	         "\"eos_token_id\": null}", &c, &e) == 0 && c.bos_id == -1 && c.n_eos == 0,
	   "llama with bos and eos null: none");
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_scaling\": {\"rope_type\": "
	         "\"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}}", &c, &e) == 0 &&
	   c.rope_orig_max == 2048, "llama3 without either max: llama's max_position_embeddings 2048");

	/* refusals */
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"vocab_size\": 384, \"eos_token_id\": 151645}",
	         &c, &e) < 0 && strstr(e.msg, "eos_token_id 151645 is not in the vocabulary (vocab_size 384)"), "%s",
	   e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 6, \"vocab_size\": 384, \"bos_token_id\": 384}",
	         &c, &e) < 0 && strstr(e.msg, "bos_token_id 384 is not in the vocabulary"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"eos_token_id\": [2, -1]}", &c, &e) < 0 &&
	   strstr(e.msg, "eos_token_id -1"), "%s", e.msg);
	{
		char longdir[4100];
		memset(longdir, 'd', sizeof longdir - 1);
		longdir[sizeof longdir - 1] = '\0';
		longdir[0] = '/';
		ok(model_config_load(longdir, &c, &e) < 0 && strstr(e.msg, "/config.json: path too long"),
		   "a model directory whose config.json path does not fit is refused, not cut short");
	}
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"eos_token_id\": 2.5}", &c, &e) < 0 &&
	   strstr(e.msg, "eos_token_id 2.5 is not a token id"), "a fractional eos_token_id is refused: %s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"eos_token_id\": [2, 1e300]}", &c, &e) < 0 &&
	   strstr(e.msg, "eos_token_id 1e+300 is not a token id"), "an eos_token_id beyond int is refused: %s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"rms_norm_eps\": 1e300}", &c, &e) < 0 &&
	   strstr(e.msg, "rms_norm_eps 1e+300 is beyond a 32-bit float"), "a float field beyond float is refused: %s",
	   e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"initializer_range\": -0.02}", &c, &e) < 0 &&
	   strstr(e.msg, "initializer_range -0.02 must be finite and not negative"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"GemmaForCausalLM\"], " SHAPE "}", &c, &e) < 0 &&
	   strstr(e.msg, "unsupported architecture GemmaForCausalLM (supported: LlamaForCausalLM, MistralForCausalLM"),
	   "%s", e.msg);
	/* Mistral is Llama's architecture with its own defaults; its sliding window must never be reached */
	ok(parse("{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 96, \"intermediate_size\": 192, "
	         "\"num_hidden_layers\": 2, \"num_attention_heads\": 16, \"vocab_size\": 384, \"sliding_window\": null, "
	         "\"attention_bias\": true}", &c, &e) == 0 && c.family == MODEL_LLAMA && c.NKV == 8 &&
	   c.max_pos == 131072 && c.HS == 6 && !c.qkv_bias && !c.o_bias && c.bos_id == 1 && c.eos_ids[0] == 2,
	   "mistral, window null: llama with 8 kv heads, 131072 positions, no bias whatever attention_bias says");
	ok(parse("{\"model_type\": \"mistral\", " QSHAPE ", \"max_position_embeddings\": 4096, "
	         "\"sliding_window\": 4096}", &c, &e) == 0 && c.family == MODEL_LLAMA && c.max_pos == 4096,
	   "mistral by model_type, its window as long as its positions: %s", c.family == MODEL_LLAMA ? "llama" : e.msg);
	ok(parse("{\"architectures\": [\"MistralForCausalLM\"], " QSHAPE ", \"max_position_embeddings\": 32768, "
	         "\"sliding_window\": 4096}", &c, &e) < 0 &&
	   strstr(e.msg, "sliding_window 4096 is not supported: attention here is over the whole sequence"),
	   "mistral v0.1's window of 4096 in 32768 positions refused: %s", e.msg);
	ok(parse("{\"architectures\": [\"MistralForCausalLM\"], " SHAPE "}", &c, &e) < 0 &&
	   strstr(e.msg, "num_key_value_heads is missing, which MistralForCausalLM takes as 8"),
	   "mistral without num_key_value_heads: named as transformers' Mistral takes it: %s", e.msg);
	ok(parse("{\"architectures\": [\"MistralForCausalLM\"], " QSHAPE "}", &c, &e) < 0 &&
	   strstr(e.msg, "sliding_window 4096, as MistralForCausalLM takes it when missing, is not supported"),
	   "mistral without sliding_window: transformers' 4096, refused: %s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"rope_scaling\": {\"rope_type\": \"yarn\", "
	         "\"factor\": 4.0}}", &c, &e) < 0 && strstr(e.msg, "yarn"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"use_sliding_window\": true}", &c, &e) < 0 &&
	   strstr(e.msg, "use_sliding_window"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"hidden_act\": \"gelu\"}", &c, &e) < 0 &&
	   strstr(e.msg, "gelu"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"mlp_bias\": true}", &c, &e) < 0 &&
	   strstr(e.msg, "mlp_bias"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 96}", &c, &e) < 0 &&
	   strstr(e.msg, "missing intermediate_size"), "%s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"num_key_value_heads\": 4}", &c, &e) < 0 &&
	   strstr(e.msg, "multiple"), "%s", e.msg);
	ok(parse("[1, 2]", &c, &e) < 0 && strstr(e.msg, "not a JSON object"), "%s", e.msg);
	/* quantized weights (AWQ, GPTQ, FP8, bitsandbytes) are refused with config.json, not later at a tensor */
	ok(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], " QSHAPE ", \"quantization_config\": {\"bits\": 4, "
	         "\"group_size\": 128, \"quant_method\": \"awq\", \"version\": \"gemm\"}}", &c, &e) < 0 &&
	   !strcmp(e.msg, "config.json: a quantized model (quantization_config, quant_method awq): grpo-tools loads "
	           "fp32, bf16 and fp16 weights only"), "an AWQ model is refused, naming the method: %s", e.msg);
	ok(parse("{\"architectures\": [\"LlamaForCausalLM\"], " SHAPE ", \"quantization_config\": "
	         "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\"}}", &c, &e) < 0 &&
	   !strcmp(e.msg, "config.json: a quantized model (quantization_config): grpo-tools loads fp32, bf16 and fp16 "
	           "weights only"), "a quantization_config without quant_method is refused too: %s", e.msg);
	ok(parse("{\"architectures\": [\"Qwen3ForCausalLM\"], " QSHAPE ", \"quantization_config\": null}", &c, &e) == 0,
	   "a null quantization_config is none (%s)", e.msg);

	/* the writer's output parses back to the same config, for each family */
	for (int f = 0; f < 3; f++) {
		struct model_config w;
		memset(&w, 0, sizeof w);
		model_config_defaults(&w, (enum model_family)f);
		w.C = 64, w.I = 128, w.L = 3, w.NH = 4, w.NKV = 2, w.HS = f == MODEL_QWEN3 ? 32 : 16, w.V = 1000;
		w.tied = f != MODEL_LLAMA, w.eps = 1e-5f, w.max_pos = 4096;
		if (f == MODEL_LLAMA) {
			w.rope_llama3 = 1, w.rope_factor = 8, w.rope_orig_max = 8192;
			w.bos_id = 1, w.n_eos = 2, w.eos_ids[0] = 2, w.eos_ids[1] = 3;
		}
		struct buf b = { 0 };
		ok(model_config_json(&w, "float32", &b) == 0, "%s: write config.json", model_family_name(w.family));
		struct model_config back;
		int r = model_config_parse((const char *)b.data, b.len, "written", &back, &e);
		if (!ok(r == 0 && memcmp(&back, &w, sizeof w) == 0, "%s: parses back to the same config",
		        model_family_name(w.family)))
			diag("%s\n%.*s", e.msg, (int)b.len, b.data);
		buf_free(&b);
	}
	test_defaults();
	test_rope();
	test_refusals();
	test_sizes();
	test_stop_ids();
	test_written();
	test_presets();
	return tap_done();
}
