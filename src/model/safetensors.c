/* safetensors — see safetensors.h. Sections: the file reader, the config, the conversion. */
#include "core/err.h"
#include "model/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "gguf/gguf.h"
#include "model/kernels.h"


/* ======== reader ======== */

struct st_file {
	void *map;        /* whole file when opened from disk */
	size_t map_len;
	struct st_tensor *t;
	char **names;
	size_t n;
};

static void st_free_parts(struct st_file *f)
{
	if (f->names)
		for (size_t i = 0; i < f->n; i++)
			free(f->names[i]);
	free(f->names);
	free(f->t);
}

void st_close(struct st_file *f)
{
	if (!f)
		return;
	st_free_parts(f);
	if (f->map)
		munmap(f->map, f->map_len);
	free(f);
}

struct st_file *st_parse(const void *buf, size_t n, const char *name, char *err, size_t errlen)
{
	const uint8_t *b = buf;
	if (n < 8) {
		err_set(err, errlen, "%s: too short for a safetensors file (%zu bytes)", name, n);
		return NULL;
	}
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | b[i];
	if (hlen > n - 8 || hlen > (100u << 20)) {
		err_set(err, errlen, "%s: header length %llu exceeds the file (%zu bytes)", name, (unsigned long long)hlen,
			n);
		return NULL;
	}
	char jerr[256];
	cJSON *root = json_parse_n((const char *)b + 8, (size_t)hlen, jerr, sizeof(jerr));
	if (!root || !cJSON_IsObject(root)) {
		err_set(err, errlen, "%s: header is not a JSON object (%s)", name, root ? "wrong type" : jerr);
		cJSON_Delete(root);
		return NULL;
	}
	struct st_file *f = calloc(1, sizeof(*f));
	size_t cap = (size_t)cJSON_GetArraySize(root);
	if (f) {
		f->t = calloc(cap ? cap : 1, sizeof(*f->t));
		f->names = calloc(cap ? cap : 1, sizeof(*f->names));
	}
	if (!f || !f->t || !f->names) {
		err_set(err, errlen, "%s: out of memory", name);
		goto fail;
	}
	const uint8_t *data = b + 8 + hlen;
	uint64_t data_len = n - 8 - hlen;
	const cJSON *it;
	cJSON_ArrayForEach(it, root)
	{
		if (strcmp(it->string, "__metadata__") == 0)
			continue;
		struct st_tensor *t = &f->t[f->n];
		const char *dt = json_get_str(it, "dtype");
		const cJSON *shape = cJSON_GetObjectItemCaseSensitive(it, "shape");
		const cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
		if (!dt || !cJSON_IsArray(shape) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2) {
			err_set(err, errlen, "%s: tensor '%s': header entry lacks dtype, shape or data_offsets", name,
				it->string);
			goto fail;
		}
		uint64_t esize;
		if (strcmp(dt, "F32") == 0) {
			t->type = GGUF_TENSOR_F32;
			esize = 4;
		} else if (strcmp(dt, "F16") == 0) {
			t->type = GGUF_TENSOR_F16;
			esize = 2;
		} else if (strcmp(dt, "BF16") == 0) {
			t->type = GGUF_TENSOR_BF16;
			esize = 2;
		} else {
			err_set(err, errlen, "%s: tensor '%s' has dtype %s; supported: F32, F16, BF16", name, it->string, dt);
			goto fail;
		}
		int nd = cJSON_GetArraySize(shape);
		if (nd > 4) {
			err_set(err, errlen, "%s: tensor '%s' has %d dimensions (at most 4 supported)", name, it->string, nd);
			goto fail;
		}
		t->n_dims = nd;
		uint64_t count = 1;
		for (int i = 0; i < nd; i++) {
			const cJSON *d = cJSON_GetArrayItem(shape, i);
			if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 1e12 ||
			    d->valuedouble != floor(d->valuedouble)) {
				err_set(err, errlen, "%s: tensor '%s' has a bad shape", name, it->string);
				goto fail;
			}
			t->shape[i] = (uint64_t)d->valuedouble;
			if (t->shape[i] && count > UINT64_MAX / 16 / t->shape[i]) {
				err_set(err, errlen, "%s: tensor '%s' shape overflows", name, it->string);
				goto fail;
			}
			count *= t->shape[i];
		}
		const cJSON *o0 = cJSON_GetArrayItem(off, 0), *o1 = cJSON_GetArrayItem(off, 1);
		if (!cJSON_IsNumber(o0) || !cJSON_IsNumber(o1) || o0->valuedouble < 0 || o1->valuedouble < o0->valuedouble ||
		    o1->valuedouble > (double)data_len) {
			err_set(err, errlen, "%s: tensor '%s': data_offsets lie outside the file's %llu data bytes", name,
				it->string, (unsigned long long)data_len);
			goto fail;
		}
		uint64_t begin = (uint64_t)o0->valuedouble, end = (uint64_t)o1->valuedouble;
		if (end - begin != count * esize) {
			err_set(err, errlen, "%s: tensor '%s': %llu bytes in data_offsets, but %s x shape needs %llu", name,
				it->string, (unsigned long long)(end - begin), dt, (unsigned long long)(count * esize));
			goto fail;
		}
		f->names[f->n] = strdup(it->string);
		if (!f->names[f->n]) {
			err_set(err, errlen, "%s: out of memory", name);
			goto fail;
		}
		t->name = f->names[f->n];
		t->data = data + begin;
		t->n_bytes = end - begin;
		f->n++;
	}
	cJSON_Delete(root);
	return f;
fail:
	cJSON_Delete(root);
	if (f)
		st_free_parts(f);
	free(f);
	return NULL;
}

struct st_file *st_open(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 8) {
		err_set(err, errlen, "%s: not a regular file of at least 8 bytes", path);
		close(fd);
		return NULL;
	}
	void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		err_set(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return NULL;
	}
	struct st_file *f = st_parse(map, (size_t)sb.st_size, path, err, errlen);
	if (!f) {
		munmap(map, (size_t)sb.st_size);
		return NULL;
	}
	f->map = map;
	f->map_len = (size_t)sb.st_size;
	return f;
}

size_t st_count(const struct st_file *f)
{
	return f->n;
}

const struct st_tensor *st_at(const struct st_file *f, size_t i)
{
	return i < f->n ? &f->t[i] : NULL;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

/* ======== config.json ======== */

static int cfg_int(const cJSON *c, const char *key, int *out, int required, const char *path, char *err,
		   size_t errlen)
{
	int64_t v;
	if (!json_get_i64(c, key, &v)) {
		if (!required)
			return 0;
		err_set(err, errlen, "%s: missing integer key '%s'", path, key);
		return -EINVAL;
	}
	if (v < 0 || v > (1 << 30)) {
		err_set(err, errlen, "%s: key '%s' = %lld is out of range", path, key, (long long)v);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static int read_config(const char *path, struct model_config *c, int *tied, char *err, size_t errlen)
{
	char jerr[512];
	cJSON *root = json_parse_file(path, jerr, sizeof(jerr));
	if (!root) {
		err_set(err, errlen, "%s", jerr);
		return -EINVAL;
	}
	int rc = -EINVAL;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text_config");
	if (!cJSON_IsObject(t))
		t = root;
	const char *mt = json_get_str(t, "model_type");
	if (!mt && t != root) /* a text_config without its own model_type: the wrapper's */
		mt = json_get_str(root, "model_type");
	int moe = mt && (strcmp(mt, "qwen3_5_moe_text") == 0 || strcmp(mt, "qwen3_5_moe") == 0);
	if (!mt || (!moe && strcmp(mt, "qwen3_5_text") != 0 && strcmp(mt, "qwen3_5") != 0)) {
		err_set(err, errlen, "%s: model_type '%s' is not supported (supported: qwen3_5_text, qwen3_5_moe_text)",
			path, mt ? mt : "(none)");
		goto out;
	}
	memset(c, 0, sizeof(*c));
	int dk = 0, dv = 0;
	c->n_ctx_train = 4096;
	/* MoE: every layer's MLP is routed experts plus a shared expert, whose width is n_ff */
	if (moe && (cfg_int(t, "num_experts", &c->n_expert, 1, path, err, errlen) ||
		    cfg_int(t, "num_experts_per_tok", &c->n_expert_used, 1, path, err, errlen) ||
		    cfg_int(t, "moe_intermediate_size", &c->n_ff_exp, 1, path, err, errlen) ||
		    cfg_int(t, "shared_expert_intermediate_size", &c->n_ff, 1, path, err, errlen)))
		goto out;
	const cJSON *mlp_only = cJSON_GetObjectItemCaseSensitive(t, "mlp_only_layers");
	if (moe && cJSON_IsArray(mlp_only) && cJSON_GetArraySize(mlp_only) > 0) {
		err_set(err, errlen, "%s: mlp_only_layers is not empty (dense layers in a MoE model are unsupported)", path);
		goto out;
	}
	if (cfg_int(t, "vocab_size", &c->n_vocab, 1, path, err, errlen) ||
	    cfg_int(t, "hidden_size", &c->n_embd, 1, path, err, errlen) ||
	    (!moe && cfg_int(t, "intermediate_size", &c->n_ff, 1, path, err, errlen)) ||
	    cfg_int(t, "num_hidden_layers", &c->n_layer, 1, path, err, errlen) ||
	    cfg_int(t, "num_attention_heads", &c->n_head, 1, path, err, errlen) ||
	    cfg_int(t, "num_key_value_heads", &c->n_head_kv, 1, path, err, errlen) ||
	    cfg_int(t, "head_dim", &c->head_dim, 1, path, err, errlen) ||
	    cfg_int(t, "linear_conv_kernel_dim", &c->ssm_conv_kernel, 1, path, err, errlen) ||
	    cfg_int(t, "linear_key_head_dim", &dk, 1, path, err, errlen) ||
	    cfg_int(t, "linear_value_head_dim", &dv, 1, path, err, errlen) ||
	    cfg_int(t, "linear_num_key_heads", &c->ssm_n_k_heads, 1, path, err, errlen) ||
	    cfg_int(t, "linear_num_value_heads", &c->ssm_n_v_heads, 1, path, err, errlen) ||
	    cfg_int(t, "max_position_embeddings", &c->n_ctx_train, 0, path, err, errlen))
		goto out;
	if (dk != dv) {
		err_set(err, errlen, "%s: linear_key_head_dim %d != linear_value_head_dim %d (unsupported, as in llama.cpp)",
			path, dk, dv);
		goto out;
	}
	c->ssm_head_dim = dk;
	double eps = 1e-6, theta = 10000.0, prf = 0.25;
	json_get_double(t, "rms_norm_eps", &eps);
	json_get_double(t, "rope_theta", &theta);
	json_get_double(t, "partial_rotary_factor", &prf);
	json_get_double(t, "rope_parameters.rope_theta", &theta);
	json_get_double(t, "rope_parameters.partial_rotary_factor", &prf);
	c->norm_eps = (float)eps;
	c->rope_theta = (float)theta;
	c->n_rot = (int)(c->head_dim * prf);
	bool b = false;
	*tied = json_get_bool(t, "tie_word_embeddings", &b) && b;
	/* The layer pattern must be periodic: full attention every k-th layer. */
	const cJSON *lt = cJSON_GetObjectItemCaseSensitive(t, "layer_types");
	int interval = 4;
	cfg_int(t, "full_attention_interval", &interval, 0, path, err, errlen);
	if (cJSON_IsArray(lt)) {
		if (cJSON_GetArraySize(lt) != c->n_layer) {
			err_set(err, errlen, "%s: layer_types has %d entries for %d layers", path, cJSON_GetArraySize(lt),
				c->n_layer);
			goto out;
		}
		int first = 0;
		for (int i = 0; i < c->n_layer && !first; i++) {
			const cJSON *e = cJSON_GetArrayItem(lt, i);
			if (cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0)
				first = i + 1;
		}
		interval = first ? first : c->n_layer + 1;
		for (int i = 0; i < c->n_layer; i++) {
			const cJSON *e = cJSON_GetArrayItem(lt, i);
			int full = cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0;
			if (full != ((i + 1) % interval == 0)) {
				err_set(err, errlen, "%s: layer_types is not 'full attention every k-th layer' (unsupported)",
					path);
				goto out;
			}
		}
	}
	c->full_attn_interval = interval;
	char why[256];
	if (model_config_check(c, why, sizeof(why))) {
		err_set(err, errlen, "%s: %s", path, why);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ======== conversion ======== */

struct hf_model {
	struct model_config cfg;
	struct model_tensor *t;
	size_t n, cap;
	char *source;
};

void hf_model_free(struct hf_model *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free((void *)h->t[i].name);
		free((void *)h->t[i].data);
	}
	free(h->t);
	free(h->source);
	free(h);
}

const struct model_config *hf_model_config(const struct hf_model *h)
{
	return &h->cfg;
}

/* Adds an fp32 tensor of ggml shape ne0 x ne1 x ne2 (ne1 = ne2 = 1: a vector; ne2 > 1: one
 * ne0 x ne1 matrix per expert); takes `data`. */
static int add_tensor3(struct hf_model *h, const char *name, float *data, uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct model_tensor *t = realloc(h->t, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		h->t = t;
		h->cap = cap;
	}
	char *nm = strdup(name);
	if (!nm)
		return -ENOMEM;
	struct model_tensor *t = &h->t[h->n++];
	memset(t, 0, sizeof(*t));
	t->name = nm;
	t->n_dims = ne2 > 1 ? 3 : ne1 == 1 ? 1 : 2;
	t->ne[0] = ne0;
	t->ne[1] = ne1;
	t->ne[2] = ne2;
	t->ne[3] = 1;
	t->type = GGUF_TENSOR_F32;
	t->data = data;
	t->n_bytes = ne0 * ne1 * ne2 * 4;
	return 0;
}

static int add_tensor(struct hf_model *h, const char *name, float *data, uint64_t ne0, uint64_t ne1)
{
	return add_tensor3(h, name, data, ne0, ne1, 1);
}

/* Grouped-by-K-head to tiled order: item (kh, s) of [H_k][r] moves to s*H_k + kh. */
static int tiled_index(int i, int Hk, int r)
{
	int kh = i / r, s = i % r;
	return s * Hk + kh;
}

/* The checkpoint's safetensors files: model.safetensors, or the shards that
 * model.safetensors.index.json's weight_map names. */
#define MAX_SHARDS 256
struct shards {
	struct st_file *f[MAX_SHARDS];
	char *path[MAX_SHARDS];
	int n;
};

static void shards_close(struct shards *sh)
{
	for (int i = 0; i < sh->n; i++) {
		st_close(sh->f[i]);
		free(sh->path[i]);
	}
	sh->n = 0;
}

static int shards_add(struct shards *sh, const char *dir, const char *file, char *err, size_t errlen)
{
	for (int i = 0; i < sh->n; i++) {
		const char *base = strrchr(sh->path[i], '/');
		if (strcmp(base ? base + 1 : sh->path[i], file) == 0)
			return 0;
	}
	if (sh->n == MAX_SHARDS) {
		err_set(err, errlen, "%s: more than %d safetensors shards", dir, MAX_SHARDS);
		return -EINVAL;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	sh->path[sh->n] = strdup(path);
	sh->f[sh->n] = sh->path[sh->n] ? st_open(path, err, errlen) : NULL;
	if (!sh->f[sh->n]) {
		free(sh->path[sh->n]);
		return -EINVAL;
	}
	sh->n++;
	return 0;
}

static int shards_open(struct shards *sh, const char *dir, char *err, size_t errlen)
{
	char ipath[4096];
	snprintf(ipath, sizeof(ipath), "%s/model.safetensors.index.json", dir);
	if (access(ipath, F_OK) != 0)
		return shards_add(sh, dir, "model.safetensors", err, errlen);
	char jerr[512];
	cJSON *root = json_parse_file(ipath, jerr, sizeof(jerr));
	if (!root) {
		err_set(err, errlen, "%s", jerr);
		return -EINVAL;
	}
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map"), *it;
	int rc = cJSON_IsObject(map) ? 0 : -EINVAL;
	if (rc)
		err_set(err, errlen, "%s: no 'weight_map' object", ipath);
	cJSON_ArrayForEach(it, map)
	{
		if (rc)
			break;
		/* Shards live beside the index: a name with a path in it is refused. */
		if (!cJSON_IsString(it) || strchr(it->valuestring, '/') || it->valuestring[0] == '.' ||
		    !it->valuestring[0]) {
			err_set(err, errlen, "%s: weight_map entry '%s' is not a file name in the directory", ipath,
				it->string);
			rc = -EINVAL;
			break;
		}
		rc = shards_add(sh, dir, it->valuestring, err, errlen);
	}
	cJSON_Delete(root);
	if (rc)
		shards_close(sh);
	return rc;
}

/* A tensor by name in any shard; *path gets the shard's path. */
static const struct st_tensor *shards_find(const struct shards *sh, const char *name, const char **path)
{
	for (int i = 0; i < sh->n; i++) {
		const struct st_tensor *t = st_find(sh->f[i], name);
		if (t) {
			if (path)
				*path = sh->path[i];
			return t;
		}
	}
	return NULL;
}

struct conv_ctx {
	struct hf_model *h;
	const struct shards *sh;
	const char *dir;
	char *err;
	size_t errlen;
};

/* Loads a safetensors tensor of exactly rows x cols (cols = 1 for vectors; 3-D [rows][1][cols]
 * accepted for conv1d) as fp32. */
static float *load_f32(struct conv_ctx *cc, const char *name, uint64_t rows, uint64_t cols)
{
	const char *path = cc->dir;
	const struct st_tensor *t = shards_find(cc->sh, name, &path);
	if (!t) {
		err_set(cc->err, cc->errlen, "%s: missing tensor '%s' (in its safetensors files)", cc->dir, name);
		return NULL;
	}
	uint64_t r = t->n_dims >= 1 ? t->shape[0] : 1, c = 1;
	for (int i = 1; i < t->n_dims; i++)
		c *= t->shape[i];
	int ok = r == rows && c == cols;
	if (t->n_dims == 3 && t->shape[1] != 1)
		ok = 0;
	if (!ok) {
		err_set(cc->err, cc->errlen, "%s: tensor '%s' has %d-D shape [%llu, %llu, ...], expected %llu x %llu",
			path, name, t->n_dims, (unsigned long long)(t->n_dims > 0 ? t->shape[0] : 0),
			(unsigned long long)(t->n_dims > 1 ? t->shape[1] : 0), (unsigned long long)rows,
			(unsigned long long)cols);
		return NULL;
	}
	float *v = malloc(sizeof(float) * rows * cols);
	if (!v) {
		err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
		return NULL;
	}
	kern_row_to_f32(t->type, t->data, v, (int)(rows * cols));
	return v;
}

enum { RO_NONE, RO_ROWS, RO_COLS };

/* Converts one tensor: load, optional +1, optional V-head reorder of rows [v0, v0+nv*hd) (or of
 * columns), then add under `gname` with ggml shape (cols, rows). */
static int convert(struct conv_ctx *cc, const char *hname, const char *gname, uint64_t rows, uint64_t cols,
		   int plus_one, int reorder, uint64_t v0, int hd)
{
	float *v = load_f32(cc, hname, rows, cols);
	if (!v)
		return -EINVAL;
	const struct model_config *c = &cc->h->cfg;
	int Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, r = Hv / Hk;
	if (plus_one)
		for (uint64_t i = 0; i < rows * cols; i++)
			v[i] += 1.0f;
	if (reorder != RO_NONE && r > 1) {
		float *o = malloc(sizeof(float) * rows * cols);
		if (!o) {
			free(v);
			err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
			return -ENOMEM;
		}
		memcpy(o, v, sizeof(float) * rows * cols);
		for (int hh = 0; hh < Hv; hh++) {
			int nh = tiled_index(hh, Hk, r);
			for (int e = 0; e < hd; e++) {
				uint64_t src = v0 + (uint64_t)hh * hd + e, dst = v0 + (uint64_t)nh * hd + e;
				if (reorder == RO_ROWS)
					memcpy(o + dst * cols, v + src * cols, sizeof(float) * cols);
				else
					for (uint64_t row = 0; row < rows; row++)
						o[row * cols + dst] = v[row * cols + src];
			}
		}
		free(v);
		v = o;
	}
	/* ggml order: ne0 is the contiguous dimension; a vector is (rows) alone. */
	if (cols == 1 ? add_tensor(cc->h, gname, v, rows, 1) : add_tensor(cc->h, gname, v, cols, rows)) {
		free(v);
		err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
		return -ENOMEM;
	}
	return 0;
}

/* ---- MoE layers (qwen3_5_moe_text) ---- */

/* Loads a 3-D tensor of exactly [d0][d1][d2] as fp32; `what` names the dimensions in the message. */
static float *load_f32_3d(struct conv_ctx *cc, const char *name, uint64_t d0, uint64_t d1, uint64_t d2,
			  const char *what)
{
	const char *path = cc->dir;
	const struct st_tensor *t = shards_find(cc->sh, name, &path);
	if (!t) {
		err_set(cc->err, cc->errlen, "%s: missing tensor '%s' (in its safetensors files)", cc->dir, name);
		return NULL;
	}
	if (t->n_dims != 3 || t->shape[0] != d0 || t->shape[1] != d1 || t->shape[2] != d2) {
		char got[96] = "";
		for (int i = 0; i < t->n_dims; i++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%llu", i ? ", " : "",
				 (unsigned long long)t->shape[i]);
		err_set(cc->err, cc->errlen, "%s: tensor '%s' has shape [%s], expected [%llu, %llu, %llu] (%s)", path,
			name, got, (unsigned long long)d0, (unsigned long long)d1, (unsigned long long)d2, what);
		return NULL;
	}
	float *v = malloc(sizeof(float) * d0 * d1 * d2);
	if (!v) {
		err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
		return NULL;
	}
	uint64_t n = d1 * d2, nb = gguf_type_row_bytes(t->type, n); /* one slice at a time: int counts */
	for (uint64_t i = 0; i < d0; i++)
		kern_row_to_f32(t->type, (const uint8_t *)t->data + i * nb, v + i * n, (int)n);
	return v;
}

/* The routed experts of layer il into llama.cpp's 3-D tensors ffn_{gate,up,down}_exps (expert
 * e's matrix is slice e, [n_ff_exp][n_embd] for gate and up, [n_embd][n_ff_exp] for down),
 * from either checkpoint layout: fused (experts.gate_up_proj [X][2F][E], gate rows first,
 * and experts.down_proj [X][E][F], as transformers holds them in memory) or one module per
 * expert (experts.N.{gate,up,down}_proj.weight, as the released checkpoints and
 * transformers' save_pretrained write them). */
static int convert_experts(struct conv_ctx *cc, const char *pre, int il)
{
	const struct model_config *c = &cc->h->cfg;
	uint64_t X = (uint64_t)c->n_expert, F = (uint64_t)c->n_ff_exp, E = (uint64_t)c->n_embd, m = F * E;
	char hn[256], gn[128], alt[256];
	int rc = -EINVAL;
	float *gate = malloc(sizeof(float) * X * m), *up = malloc(sizeof(float) * X * m), *down = NULL, *gu = NULL;
	snprintf(hn, sizeof(hn), "%slayers.%d.mlp.experts.gate_up_proj", pre, il);
	snprintf(alt, sizeof(alt), "%slayers.%d.mlp.experts.0.gate_proj.weight", pre, il);
	if (!gate || !up) {
		err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
		goto out;
	}
	if (shards_find(cc->sh, hn, NULL)) {
		if (!(gu = load_f32_3d(cc, hn, X, 2 * F, E, "num_experts, 2 x moe_intermediate_size, hidden_size")))
			goto out;
		snprintf(hn, sizeof(hn), "%slayers.%d.mlp.experts.down_proj", pre, il);
		if (!(down = load_f32_3d(cc, hn, X, E, F, "num_experts, hidden_size, moe_intermediate_size")))
			goto out;
		for (uint64_t e = 0; e < X; e++) {
			memcpy(gate + e * m, gu + e * 2 * m, sizeof(float) * m);
			memcpy(up + e * m, gu + e * 2 * m + m, sizeof(float) * m);
		}
	} else if (!shards_find(cc->sh, alt, NULL)) {
		err_set(cc->err, cc->errlen, "%s: missing tensor '%s' (fused experts) or '%s' (one per expert)", cc->dir,
			hn, alt);
		goto out;
	} else {
		if (!(down = malloc(sizeof(float) * X * m))) {
			err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
			goto out;
		}
		static const char *const part[3] = { "gate_proj", "up_proj", "down_proj" };
		float *dst[3] = { gate, up, down };
		for (uint64_t e = 0; e < X; e++)
			for (int k = 0; k < 3; k++) {
				snprintf(hn, sizeof(hn), "%slayers.%d.mlp.experts.%llu.%s.weight", pre, il, (unsigned long long)e,
					 part[k]);
				float *v = load_f32(cc, hn, k < 2 ? F : E, k < 2 ? E : F);
				if (!v)
					goto out;
				memcpy(dst[k] + e * m, v, sizeof(float) * m);
				free(v);
			}
	}
	snprintf(gn, sizeof(gn), "blk.%d.ffn_gate_exps.weight", il);
	if ((rc = add_tensor3(cc->h, gn, gate, E, F, X)))
		goto out;
	gate = NULL;
	snprintf(gn, sizeof(gn), "blk.%d.ffn_up_exps.weight", il);
	if ((rc = add_tensor3(cc->h, gn, up, E, F, X)))
		goto out;
	up = NULL;
	snprintf(gn, sizeof(gn), "blk.%d.ffn_down_exps.weight", il);
	if ((rc = add_tensor3(cc->h, gn, down, F, E, X)))
		goto out;
	down = NULL;
out:
	if (rc == -ENOMEM)
		err_set(cc->err, cc->errlen, "%s: out of memory", cc->dir);
	free(gate);
	free(up);
	free(down);
	free(gu);
	return rc;
}

/* The MLP of MoE layer il: router, shared expert and its gate, routed experts. The router
 * (mlp.gate) is softmax over all experts, top num_experts_per_tok, renormalised: the rule
 * model.c computes. */
static int convert_moe_mlp(struct conv_ctx *cc, const char *pre, int il)
{
	const struct model_config *c = &cc->h->cfg;
	uint64_t E = (uint64_t)c->n_embd, S = (uint64_t)c->n_ff;
	char hn[256], gn[128];
#define HL(s) (snprintf(hn, sizeof(hn), "%slayers.%d.mlp.%s", pre, il, s), hn)
#define GL(s) (snprintf(gn, sizeof(gn), "blk.%d.%s", il, s), gn)
	if (convert(cc, HL("gate.weight"), GL("ffn_gate_inp.weight"), (uint64_t)c->n_expert, E, 0, RO_NONE, 0, 0) ||
	    convert(cc, HL("shared_expert_gate.weight"), GL("ffn_gate_inp_shexp.weight"), 1, E, 0, RO_NONE, 0, 0) ||
	    convert(cc, HL("shared_expert.gate_proj.weight"), GL("ffn_gate_shexp.weight"), S, E, 0, RO_NONE, 0, 0) ||
	    convert(cc, HL("shared_expert.up_proj.weight"), GL("ffn_up_shexp.weight"), S, E, 0, RO_NONE, 0, 0) ||
	    convert(cc, HL("shared_expert.down_proj.weight"), GL("ffn_down_shexp.weight"), E, S, 0, RO_NONE, 0, 0))
		return -EINVAL;
#undef HL
#undef GL
	return convert_experts(cc, pre, il);
}

static const struct model_tensor *hf_find(void *ctx, const char *name)
{
	struct hf_model *h = ctx;
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->t[i].name, name) == 0)
			return &h->t[i];
	return NULL;
}

/* Finds the prefix under which the text model's tensors live. */
static const char *text_prefix(const struct shards *sh)
{
	static const char *const prefixes[] = { "model.language_model.", "model.", "" };
	char name[128];
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		snprintf(name, sizeof(name), "%sembed_tokens.weight", prefixes[i]);
		if (shards_find(sh, name, NULL))
			return prefixes[i];
	}
	return NULL;
}

struct hf_model *hf_model_import(const char *dir, char *err, size_t errlen)
{
	char cpath[4096];
	snprintf(cpath, sizeof(cpath), "%s/config.json", dir);
	struct hf_model *h = calloc(1, sizeof(*h));
	if (!h) {
		err_set(err, errlen, "%s: out of memory", dir);
		return NULL;
	}
	int tied = 0;
	if (read_config(cpath, &h->cfg, &tied, err, errlen)) {
		hf_model_free(h);
		return NULL;
	}
	h->source = strdup(dir);
	struct shards sh = { .n = 0 };
	if (!h->source || shards_open(&sh, dir, err, errlen)) {
		hf_model_free(h);
		return NULL;
	}
	const struct model_config *c = &h->cfg;
	struct conv_ctx cc = { h, &sh, dir, err, errlen };
	const char *pre = text_prefix(&sh);
	if (!pre) {
		err_set(err, errlen, "%s: missing tensor 'model.embed_tokens.weight' (in its safetensors files)", dir);
		goto fail;
	}
	int E = c->n_embd, d = c->ssm_head_dim, Hk = c->ssm_n_k_heads, Hv = c->ssm_n_v_heads, hd = c->head_dim;
	uint64_t key_dim = (uint64_t)Hk * d, conv_dim = 2 * key_dim + (uint64_t)Hv * d;
	char hn[256], gn[128];
#define H(s) (snprintf(hn, sizeof(hn), "%s%s", pre, s), hn)
	if (convert(&cc, H("embed_tokens.weight"), "token_embd.weight", (uint64_t)c->n_vocab, E, 0, RO_NONE, 0, 0) ||
	    convert(&cc, H("norm.weight"), "output_norm.weight", E, 1, 1, RO_NONE, 0, 0))
		goto fail;
	if (!tied && convert(&cc, "lm_head.weight", "output.weight", (uint64_t)c->n_vocab, E, 0, RO_NONE, 0, 0))
		goto fail;
	for (int il = 0; il < c->n_layer; il++) {
		int attn = (il + 1) % c->full_attn_interval == 0;
#define HL(s) (snprintf(hn, sizeof(hn), "%slayers.%d.%s", pre, il, s), hn)
#define GL(s) (snprintf(gn, sizeof(gn), "blk.%d.%s", il, s), gn)
		if (convert(&cc, HL("input_layernorm.weight"), GL("attn_norm.weight"), E, 1, 1, RO_NONE, 0, 0) ||
		    convert(&cc, HL("post_attention_layernorm.weight"), GL("post_attention_norm.weight"), E, 1, 1,
			    RO_NONE, 0, 0))
			goto fail;
		if (c->n_expert > 0 ? convert_moe_mlp(&cc, pre, il) != 0 :
		    (convert(&cc, HL("mlp.gate_proj.weight"), GL("ffn_gate.weight"), c->n_ff, E, 0, RO_NONE, 0, 0) ||
		     convert(&cc, HL("mlp.up_proj.weight"), GL("ffn_up.weight"), c->n_ff, E, 0, RO_NONE, 0, 0) ||
		     convert(&cc, HL("mlp.down_proj.weight"), GL("ffn_down.weight"), E, c->n_ff, 0, RO_NONE, 0, 0)))
			goto fail;
		if (attn) {
			if (convert(&cc, HL("self_attn.q_proj.weight"), GL("attn_q.weight"), (uint64_t)c->n_head * hd * 2, E,
				    0, RO_NONE, 0, 0) ||
			    convert(&cc, HL("self_attn.k_proj.weight"), GL("attn_k.weight"), (uint64_t)c->n_head_kv * hd, E, 0,
				    RO_NONE, 0, 0) ||
			    convert(&cc, HL("self_attn.v_proj.weight"), GL("attn_v.weight"), (uint64_t)c->n_head_kv * hd, E, 0,
				    RO_NONE, 0, 0) ||
			    convert(&cc, HL("self_attn.o_proj.weight"), GL("attn_output.weight"), E, (uint64_t)c->n_head * hd,
				    0, RO_NONE, 0, 0) ||
			    convert(&cc, HL("self_attn.q_norm.weight"), GL("attn_q_norm.weight"), hd, 1, 1, RO_NONE, 0, 0) ||
			    convert(&cc, HL("self_attn.k_norm.weight"), GL("attn_k_norm.weight"), hd, 1, 1, RO_NONE, 0, 0))
				goto fail;
			continue;
		}
		if (convert(&cc, HL("linear_attn.in_proj_qkv.weight"), GL("attn_qkv.weight"), conv_dim, E, 0, RO_ROWS,
			    2 * key_dim, d) ||
		    convert(&cc, HL("linear_attn.in_proj_z.weight"), GL("attn_gate.weight"), (uint64_t)Hv * d, E, 0,
			    RO_ROWS, 0, d) ||
		    convert(&cc, HL("linear_attn.in_proj_b.weight"), GL("ssm_beta.weight"), Hv, E, 0, RO_ROWS, 0, 1) ||
		    convert(&cc, HL("linear_attn.in_proj_a.weight"), GL("ssm_alpha.weight"), Hv, E, 0, RO_ROWS, 0, 1) ||
		    convert(&cc, HL("linear_attn.dt_bias"), GL("ssm_dt.bias"), Hv, 1, 0, RO_ROWS, 0, 1) ||
		    convert(&cc, HL("linear_attn.A_log"), GL("ssm_a"), Hv, 1, 0, RO_ROWS, 0, 1) ||
		    convert(&cc, HL("linear_attn.conv1d.weight"), GL("ssm_conv1d.weight"), conv_dim,
			    (uint64_t)c->ssm_conv_kernel, 0, RO_ROWS, 2 * key_dim, d) ||
		    convert(&cc, HL("linear_attn.norm.weight"), GL("ssm_norm.weight"), d, 1, 0, RO_NONE, 0, 0) ||
		    convert(&cc, HL("linear_attn.out_proj.weight"), GL("ssm_out.weight"), E, (uint64_t)Hv * d, 0, RO_COLS,
			    0, d))
			goto fail;
		/* ssm_a = −exp(A_log), in place. */
		float *av = (float *)hf_find(h, GL("ssm_a"))->data;
		for (int i = 0; i < Hv; i++)
			av[i] = -expf(av[i]);
#undef HL
#undef GL
	}
#undef H
	shards_close(&sh);
	return h;
fail:
	shards_close(&sh);
	hf_model_free(h);
	return NULL;
}

struct model *hf_model_create(struct hf_model *h, int n_threads, char *err, size_t errlen)
{
	return model_create(&h->cfg, hf_find, h, h->source, n_threads, err, errlen);
}

int hf_model_write_gguf(const struct hf_model *h, struct gguf_writer *w, uint32_t matrix_type, const char *path,
			char *err, size_t errlen)
{
	if (matrix_type != GGUF_TENSOR_F32 && matrix_type != GGUF_TENSOR_F16 && matrix_type != GGUF_TENSOR_BF16 &&
	    matrix_type != GGUF_TENSOR_Q8_0) {
		err_set(err, errlen, "%s: matrix type %u unsupported (F32, F16, BF16, Q8_0)", path, matrix_type);
		return -EINVAL;
	}
	int rc = model_config_to_gguf(&h->cfg, w);
	if (rc) {
		err_set(err, errlen, "%s: cannot add the config keys", path);
		return rc;
	}
	for (size_t i = 0; i < h->n && !rc; i++) {
		const struct model_tensor *t = &h->t[i];
		const float *v = t->data;
		uint32_t type = GGUF_TENSOR_F32;
		/* Matrices (and the 3-D expert tensors) are converted; norms, conv kernels, per-head
		 * vectors and the MoE router stay fp32, as llama.cpp's converter keeps them. Q8_0
		 * needs rows that are a multiple of 32. */
		int is_matrix = t->n_dims >= 2 && strstr(t->name, "ssm_conv1d") == NULL &&
				strstr(t->name, "ffn_gate_inp") == NULL;
		if (is_matrix && (matrix_type != GGUF_TENSOR_Q8_0 || t->ne[0] % 32 == 0))
			type = matrix_type;
		uint64_t n = t->ne[0] * t->ne[1] * t->ne[2], rows = t->ne[1] * t->ne[2];
		if (type == GGUF_TENSOR_F32) {
			rc = gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, type, v, n * 4);
			continue;
		}
		uint64_t nb = type == GGUF_TENSOR_Q8_0 ? n / 32 * 34 : n * 2;
		uint8_t *buf = malloc(nb);
		if (!buf) {
			rc = -ENOMEM;
			break;
		}
		if (type == GGUF_TENSOR_Q8_0) {
			for (uint64_t r = 0; r < rows; r++)
				kern_quantize_q8_0(v + r * t->ne[0], buf + r * (t->ne[0] / 32 * 34), (int)t->ne[0]);
		} else {
			for (uint64_t k = 0; k < n; k++) {
				uint16_t x = type == GGUF_TENSOR_F16 ? kern_f32_to_f16(v[k]) : kern_f32_to_bf16(v[k]);
				memcpy(buf + 2 * k, &x, 2);
			}
		}
		rc = gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, type, buf, nb);
		free(buf);
	}
	if (rc) {
		err_set(err, errlen, "%s: cannot add tensors to the GGUF writer (%s)", path, strerror(-rc));
		return rc;
	}
	return gguf_writer_write(w, path, err, errlen);
}

int hf_model_convert(const char *dir, const char *out, uint32_t matrix_type, char *err, size_t errlen)
{
	struct hf_model *h = hf_model_import(dir, err, errlen);
	if (!h)
		return -EINVAL;
	struct gguf_writer *w = gguf_writer_create();
	int rc = w ? hf_model_write_gguf(h, w, matrix_type, out, err, errlen) : -ENOMEM;
	gguf_writer_destroy(w);
	hf_model_free(h);
	return rc;
}
