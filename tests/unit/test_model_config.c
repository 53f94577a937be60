/*
 * test_model_config: config.json of each family in both schemas of
 * transformers (top-level rope_theta / rope_scaling, and rope_parameters),
 * the fields that change the math, the refusals, and the writer round trip.
 */
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

int main(void)
{
	struct model_config c;
	struct err e = { 0 };

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
	return tap_done();
}
