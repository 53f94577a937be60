/*
 * model_config.h: the shape and numerics of a model, from Hugging Face's
 * config.json.
 *
 * Holds every field that changes the math of LlamaForCausalLM,
 * Qwen2ForCausalLM and Qwen3ForCausalLM and nothing else. Both schemas of
 * transformers are read: the older top-level `rope_theta` / `rope_scaling`
 * (with `type` or `rope_type`) and the newer `rope_parameters`. Anything that
 * would change the math in a way this project does not implement (another
 * architecture, a non-SiLU activation, sliding-window layers, MLP bias, a
 * RoPE type other than default or llama3) is an error naming the field, so
 * that a model is never run silently wrong; so is a key given twice in one
 * object, which transformers would read as its last value and cJSON as
 * its first.
 *
 * model_config_json() writes the config back in the transformers 5 style
 * (with `dtype` and `rope_parameters`, plus `torch_dtype` and a top-level
 * `rope_theta` for older readers), as grpo-init and checkpoints need it.
 */
#ifndef GRPO_MODEL_CONFIG_H
#define GRPO_MODEL_CONFIG_H

#include "base/buf.h"
#include "base/err.h"

enum model_family { MODEL_LLAMA, MODEL_QWEN2, MODEL_QWEN3 };

#define MODEL_MAX_EOS 8

struct model_config {
	enum model_family family;
	int C;          /* hidden_size */
	int I;          /* intermediate_size (SwiGLU width) */
	int L;          /* num_hidden_layers */
	int NH;         /* num_attention_heads */
	int NKV;        /* num_key_value_heads; NH % NKV == 0 */
	int HS;         /* head_dim, hidden_size / heads unless given (Qwen3 often differs) */
	int V;          /* vocab_size (rows of the embedding, may exceed the tokenizer's) */
	int max_pos;    /* max_position_embeddings (informational) */
	float eps;      /* rms_norm_eps */
	float rope_theta;
	int rope_llama3;            /* rope_type "llama3": wavelength-banded inv_freq scaling */
	float rope_factor, rope_low_freq, rope_high_freq;
	int rope_orig_max;          /* original_max_position_embeddings */
	int tied;       /* tie_word_embeddings: lm_head is embed_tokens */
	int qkv_bias;   /* q/k/v projections have bias (Qwen2 always; attention_bias elsewhere) */
	int o_bias;     /* o_proj has bias (attention_bias in Llama and Qwen3) */
	int qk_norm;    /* Qwen3: per-head RMSNorm of q and k before RoPE */
	int bos_id;     /* -1 when none */
	int eos_ids[MODEL_MAX_EOS];
	int n_eos;
	float init_std; /* initializer_range */
};

const char *model_family_name(enum model_family f);            /* "qwen2" ... */
int model_family_parse(const char *s, enum model_family *f);   /* -1 if unknown */

/*
 * Parse config.json text; `name` is used in messages (usually the path).
 * A key left out means what it means to transformers' config class of the
 * family (num_key_value_heads 32 for Qwen, Qwen3's head_dim 128, Llama's
 * max_position_embeddings 2048 and bos/eos 1/2), not a family's usual value.
 */
int model_config_parse(const char *json, size_t len, const char *name, struct model_config *c,
                       struct err *e);
/* Read DIR/config.json. */
int model_config_load(const char *dir, struct model_config *c, struct err *e);

/*
 * The token ids that end a sampled response from the model in dir: c's
 * eos ids (config.json's) and, when dir/generation_config.json exists, its
 * eos_token_id (an integer or a list), as transformers' generate() stops at
 * those; each once, into ids (room for MODEL_MAX_STOP). A
 * generation_config.json that is not a JSON object, or whose eos_token_id
 * is malformed or outside the vocabulary, is an error naming it.
 */
#define MODEL_MAX_STOP (2 * MODEL_MAX_EOS)
int model_stop_ids_load(const char *dir, const struct model_config *c, int *ids, int *n, struct err *e);

/* Check the shape is consistent (positive sizes, NH % NKV, even HS). */
int model_config_check(const struct model_config *c, struct err *e);

/* A config with the defaults of a family (bias, qk-norm, eps, theta) for the given shape. */
void model_config_defaults(struct model_config *c, enum model_family f);

/*
 * Named shapes: "tiny" (qwen2, hidden 64, 2 layers, vocabulary 512, for tests),
 * "small" (qwen2, hidden 256, 4 layers, vocabulary 8192, for benchmarks) and
 * the shapes of real checkpoints. All tied. -1 for an unknown name.
 */
#define MODEL_PRESETS "tiny, small, qwen2.5-0.5b, qwen2.5-1.5b, qwen3-0.6b, llama3.2-1b"
int model_config_preset(const char *name, struct model_config *c);

/* Append config.json (dtype "float32" or "bfloat16") to b. */
int model_config_json(const struct model_config *c, const char *dtype, struct buf *b);

#endif
