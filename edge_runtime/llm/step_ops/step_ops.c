/* edge-runtime's decode-step kernels: an onnxruntime custom-op library (domain "edge_runtime").
 *
 * A decode step of a model built with `fold_steps` runs the one-row branch of its graph.
 * onnxruntime spends there, around the 4-bit weight kernels, a GroupQueryAttention of ~12 us a
 * call plus ~0.15 us per cached token, and a few us for each small node: a folded projection
 * reads its input with the input's block means appended (AveragePool + Concat), and the FFN's
 * SiLU gate is four nodes. Three ops take their place (rewrite.py matches them):
 *
 *   DecodeAttention(qkv [B,1,(H+2KV)D], past_key, past_value [B,KV,M,D], seqlens_k int32 [B],
 *                   cos_cache, sin_cache [P,D/2], position_ids int64 [B,1])
 *       -> (attention [B,1,HD (+ HD/means_block)], present_key, present_value)
 *     GroupQueryAttention's contract for one new token per sequence with rotary embedding
 *     (interleaved or not), no window, no softcap: the new K/V are written at seqlens_k[b] of
 *     the cache (in place when present is bound to past's buffer, as the engine binds it) and
 *     the token attends to cache rows 0..seqlens_k[b]. The rows are cut into chunks of 64,
 *     one task per (KV head, chunk) on onnxruntime's intra-op pool, each keeping its own
 *     softmax maximum; the chunks are then merged (the split-softmax of flash decoding).
 *     With means_block > 0 the output's block means are appended.
 *
 *   SkipNormMeans(x, skip [..., N], gamma [N]) -> (y [..., N + N/block], x + skip)
 *     SkipSimplifiedLayerNormalization (RMS norm of x + skip) with y's block means appended.
 *
 *   GatedMeans(x [..., 2F]) -> [..., F + F/block]
 *     y = silu(x[..., :F]) * x[..., F:] with y's block means appended: the Split, Sigmoid, Mul,
 *     Mul, AveragePool and Concat before a folded down projection.
 *
 * Built on the device by `edge-runtime models build` (compile.py) against onnxruntime's C API
 * header; tested against GroupQueryAttention and numpy in tests/integration/test_step_ops.py.
 * Vectors are GCC vector extensions (8 floats; the compiler splits them for NEON on the
 * Jetson's Arm cores).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnxruntime_c_api.h"

typedef float vec __attribute__((vector_size(32)));
typedef int32_t ivec __attribute__((vector_size(32)));
#define LANES 8
#define CHUNK 64   /* cache rows per task */
#define MAX_D 256  /* head size */
#define MAX_G 16   /* query heads per KV head */
#define INLINE static inline __attribute__((always_inline))

static const OrtApi *ort;

#define CHECK(expr) do { OrtStatus *st_ = (expr); if (st_) return st_; } while (0)
#define FAIL(op, msg) return ort->CreateStatus(ORT_INVALID_ARGUMENT, op ": " msg)

/* -- vector helpers ----------------------------------------------------------------------- */

INLINE vec load(const float *p) { vec v; memcpy(&v, p, sizeof v); return v; }
INLINE void store(float *p, vec v) { memcpy(p, &v, sizeof v); }
INLINE vec splat(float x) { return (vec){0} + x; }

INLINE float hsum(vec v) {
  float s = 0.f;
  for (int l = 0; l < LANES; l++) s += v[l];
  return s;
}

/* means[i] = the mean of x[i * block .. (i + 1) * block), for n / block blocks, summed in
 * order as AveragePool sums them (the same float result) */
static void block_means(float *means, const float *x, int64_t n, int64_t block) {
  for (int64_t b = 0; b < n / block; b++) {
    float acc = 0.f;
    for (int64_t i = b * block; i < (b + 1) * block; i++) acc += x[i];
    means[b] = acc / (float)block;
  }
}

INLINE vec blend(ivec mask, vec a, vec b) {   /* mask ? a : b, lane by lane */
  ivec ia, ib;
  memcpy(&ia, &a, sizeof a);
  memcpy(&ib, &b, sizeof b);
  ia = (mask & ia) | (~mask & ib);
  memcpy(&a, &ia, sizeof a);
  return a;
}

/* e^x for x <= 0: x = n ln2 + r with |r| <= ln2/2; e^r by its degree-6 Taylor polynomial
 * (relative error < 3e-7), 2^n put into the exponent bits; below -87, e^-87 (~1.6e-38) */
INLINE vec exp_nonpositive(vec x) {
  x = blend(x < -87.f, splat(-87.f), x);
  /* x <= 0: x log2(e) - 1/2 truncated toward zero is x log2(e) rounded to nearest */
  vec n = __builtin_convertvector(__builtin_convertvector(x * 1.44269504f - 0.5f, ivec), vec);
  vec r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;   /* ln2, two parts */
  vec p = splat(1.f / 720);
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  ivec bits = (__builtin_convertvector(n, ivec) + 127) << 23;
  vec two_n;
  memcpy(&two_n, &bits, sizeof bits);
  return p * two_n;
}

INLINE vec silu(vec x) {   /* x sigmoid(x), through e^-|x| so the exponent stays <= 0 */
  vec ax = blend(x < 0.f, -x, x);
  vec e = exp_nonpositive(-ax);
  vec up = 1.f / (1.f + e);            /* sigmoid(|x|) */
  return x * blend(x < 0.f, e * up, up);
}

static OrtStatus *input(OrtKernelContext *ctx, size_t i, const void **data, int64_t *dims,
                        size_t *nd) {
  const OrtValue *v;
  OrtTensorTypeAndShapeInfo *info;
  CHECK(ort->KernelContext_GetInput(ctx, i, &v));
  CHECK(ort->GetTensorTypeAndShape(v, &info));
  OrtStatus *st = ort->GetDimensionsCount(info, nd);
  if (!st && *nd <= 4) st = ort->GetDimensions(info, dims, *nd);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  if (st) return st;
  if (*nd > 4) FAIL("edge_runtime", "an input has more than 4 dimensions");
  return ort->GetTensorMutableData((OrtValue *)v, (void **)data);
}

/* -- DecodeAttention ---------------------------------------------------------------------- */

typedef struct {
  int64_t heads, kv_heads, interleaved, means_block;
  float scale;
} Attention;

typedef struct {        /* one sequence's call, shared by its chunk tasks */
  const float *q;       /* [H, D], rotated */
  const float *K, *V;   /* the sequence's cache, [KV, M, D] */
  int64_t M, D, G, KV, n, chunks;
  float scale;
  float *part;          /* per task: G maxima, G sums, G x D weighted sums */
} Call;

/* G query heads over cache rows [t0, t1) of KV head g: per head the chunk's maximum score, the
 * sum of e^(score - maximum) and the e^(score - maximum)-weighted sum of the V rows */
INLINE void attend_chunk(const Call *c, int64_t g, int64_t t0, int64_t t1, float *part,
                         int64_t d) {
  int64_t G = c->G, n = t1 - t0, nv = d / LANES;
  const float *K = c->K + (g * c->M + t0) * d, *V = c->V + (g * c->M + t0) * d;
  const float *q = c->q + g * G * d;
  float s[MAX_G * CHUNK];
  for (int64_t t = 0; t < n; t++) {
    const float *kt = K + t * d;
    for (int64_t j = 0; j < G; j++) {
      const float *qj = q + j * d;
      vec acc = load(qj) * load(kt);
      for (int64_t i = 1; i < nv; i++) acc += load(qj + i * LANES) * load(kt + i * LANES);
      s[j * CHUNK + t] = hsum(acc) * c->scale;
    }
  }
  float *mx = part, *sum = part + G, *out = part + 2 * G;
  for (int64_t j = 0; j < G; j++) {
    float *w = s + j * CHUNK, m = w[0];
    for (int64_t t = 1; t < n; t++) m = w[t] > m ? w[t] : m;
    int64_t t = 0;
    vec acc = {0};
    for (; t + LANES <= n; t += LANES) {
      vec e = exp_nonpositive(load(w + t) - m);
      store(w + t, e);
      acc += e;
    }
    float total = hsum(acc);
    for (; t < n; t++) {
      w[t] = expf(w[t] - m);
      total += w[t];
    }
    mx[j] = m;
    sum[j] = total;
    vec o[MAX_D / LANES];
    for (int64_t i = 0; i < nv; i++) o[i] = (vec){0};
    for (t = 0; t < n; t++) {
      vec wt = splat(w[t]);
      const float *vt = V + t * d;
      for (int64_t i = 0; i < nv; i++) o[i] += wt * load(vt + i * LANES);
    }
    for (int64_t i = 0; i < nv; i++) store(out + j * d + i * LANES, o[i]);
  }
}

static void attend_task(void *data, size_t i) {
  const Call *c = data;
  int64_t g = (int64_t)i / c->chunks, k = (int64_t)i % c->chunks;
  int64_t t0 = k * CHUNK, t1 = t0 + CHUNK < c->n ? t0 + CHUNK : c->n;
  float *part = c->part + (int64_t)i * c->G * (c->D + 2);
  switch (c->D) {   /* a constant head size keeps a row's vectors in registers */
    case 64: attend_chunk(c, g, t0, t1, part, 64); break;
    case 128: attend_chunk(c, g, t0, t1, part, 128); break;
    default: attend_chunk(c, g, t0, t1, part, c->D); break;
  }
}

/* out = sum_k e^(max_k - max) o_k / sum_k e^(max_k - max) sum_k, per query head */
static void merge_chunks(const Call *c, float *out) {
  int64_t G = c->G, D = c->D, stride = G * (D + 2);
  for (int64_t g = 0; g < c->KV; g++) {
    const float *first = c->part + g * c->chunks * stride;
    for (int64_t j = 0; j < G; j++) {
      float m = first[j], total = 0.f;
      for (int64_t k = 1; k < c->chunks; k++) m = first[k * stride + j] > m ? first[k * stride + j] : m;
      float *o = out + (g * G + j) * D;
      for (int64_t i = 0; i < D; i++) o[i] = 0.f;
      for (int64_t k = 0; k < c->chunks; k++) {
        const float *p = first + k * stride, *pk = p + 2 * G + j * D;
        float w = expf(p[j] - m);
        total += w * p[G + j];
        for (int64_t i = 0; i < D; i++) o[i] += w * pk[i];
      }
      float inv = 1.f / total;
      for (int64_t i = 0; i < D; i++) o[i] *= inv;
    }
  }
}

static void rotate(float *dst, const float *src, const float *cos, const float *sin, int64_t d,
                   int interleaved) {
  int64_t h = d / 2;
  for (int64_t i = 0; i < h; i++) {
    int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + h;
    float x = src[a], y = src[b];
    dst[a] = x * cos[i] - y * sin[i];
    dst[b] = x * sin[i] + y * cos[i];
  }
}

static OrtStatus *attention_create(const OrtCustomOp *op, const OrtApi *api,
                                   const OrtKernelInfo *info, void **out) {
  (void)op; (void)api;
  Attention *k = calloc(1, sizeof *k);
  if (!k) return ort->CreateStatus(ORT_FAIL, "DecodeAttention: out of memory");
  OrtStatus *st;
  if ((st = ort->KernelInfoGetAttribute_int64(info, "num_heads", &k->heads)) ||
      (st = ort->KernelInfoGetAttribute_int64(info, "kv_num_heads", &k->kv_heads)) ||
      (st = ort->KernelInfoGetAttribute_int64(info, "rotary_interleaved", &k->interleaved)) ||
      (st = ort->KernelInfoGetAttribute_float(info, "scale", &k->scale))) {
    free(k);
    return st;
  }
  if ((st = ort->KernelInfoGetAttribute_int64(info, "means_block", &k->means_block))) {
    ort->ReleaseStatus(st);   /* optional: no means appended */
    k->means_block = 0;
  }
  if (k->means_block < 0 || k->means_block % LANES) {
    free(k);
    FAIL("DecodeAttention", "means_block must be 0 or a positive multiple of 8");
  }
  if (k->heads <= 0 || k->kv_heads <= 0 || k->heads % k->kv_heads || k->heads / k->kv_heads > MAX_G) {
    free(k);
    FAIL("DecodeAttention", "num_heads must be a multiple of kv_num_heads, at most 16 per KV head");
  }
  *out = k;
  return NULL;
}

static OrtStatus *attention_compute(void *kernel, OrtKernelContext *ctx) {
  const Attention *k = kernel;
  const float *qkv, *pk, *pv, *cosc, *sinc;
  const int32_t *seqlens;
  const int64_t *pos;
  int64_t dq[4], dk[4], dv[4], ds[4], dc[4], dsn[4], dp[4];
  size_t nq, nk, nv, ns, nc, nsn, np_;
  CHECK(input(ctx, 0, (const void **)&qkv, dq, &nq));
  CHECK(input(ctx, 1, (const void **)&pk, dk, &nk));
  CHECK(input(ctx, 2, (const void **)&pv, dv, &nv));
  CHECK(input(ctx, 3, (const void **)&seqlens, ds, &ns));
  CHECK(input(ctx, 4, (const void **)&cosc, dc, &nc));
  CHECK(input(ctx, 5, (const void **)&sinc, dsn, &nsn));
  CHECK(input(ctx, 6, (const void **)&pos, dp, &np_));
  if (nq != 3 || dq[1] != 1)
    FAIL("DecodeAttention", "takes one new token per sequence (query [batch, 1, hidden])");
  int64_t B = dq[0], H = k->heads, KV = k->kv_heads;
  if (nk != 4 || nv != 4 || memcmp(dk, dv, sizeof dk) || dk[0] != B || dk[1] != KV)
    FAIL("DecodeAttention", "past key and value must both be [batch, kv_heads, max_len, head_dim]");
  int64_t M = dk[2], D = dk[3];
  if (D % LANES || D > MAX_D || dq[2] != (H + 2 * KV) * D)
    FAIL("DecodeAttention", "query must pack num_heads + 2 kv_num_heads heads of head_dim (a multiple of 8, at most 256)");
  if (ns != 1 || ds[0] != B || np_ != 2 || dp[0] != B || dp[1] != 1)
    FAIL("DecodeAttention", "seqlens_k must be [batch] and position_ids [batch, 1]");
  if (nc != 2 || nsn != 2 || dc[1] != D / 2 || memcmp(dc, dsn, 2 * sizeof *dc))
    FAIL("DecodeAttention", "cos and sin caches must be [positions, head_dim / 2]");
  int64_t longest = 0;   /* the longest sequence's new row: the chunks the buffer needs */
  for (int64_t b = 0; b < B; b++) {
    if (seqlens[b] < 0 || seqlens[b] >= M) FAIL("DecodeAttention", "seqlens_k points outside the KV cache");
    longest = seqlens[b] > longest ? seqlens[b] : longest;
    if (pos[b] < 0 || pos[b] >= dc[0]) FAIL("DecodeAttention", "position outside the cos/sin cache");
  }
  int64_t blk = k->means_block, row = H * D + (blk ? H * D / blk : 0);
  if (blk && (H * D) % blk) FAIL("DecodeAttention", "num_heads x head_dim must be whole blocks of means_block");
  int64_t out_dims[3] = {B, 1, row};
  OrtValue *o0, *o1, *o2;
  float *out, *ck, *cv;
  CHECK(ort->KernelContext_GetOutput(ctx, 0, out_dims, 3, &o0));
  CHECK(ort->KernelContext_GetOutput(ctx, 1, dk, 4, &o1));
  CHECK(ort->KernelContext_GetOutput(ctx, 2, dk, 4, &o2));
  CHECK(ort->GetTensorMutableData(o0, (void **)&out));
  CHECK(ort->GetTensorMutableData(o1, (void **)&ck));
  CHECK(ort->GetTensorMutableData(o2, (void **)&cv));
  size_t cache_bytes = (size_t)(B * KV * M * D) * sizeof(float);
  if (ck != pk) memcpy(ck, pk, cache_bytes);   /* present not bound to past's buffer */
  if (cv != pv) memcpy(cv, pv, cache_bytes);
  int64_t G = H / KV, max_chunks = longest / CHUNK + 1;
  float *q = malloc(sizeof(float) * (size_t)(H * D + KV * max_chunks * G * (D + 2)));
  if (!q) return ort->CreateStatus(ORT_FAIL, "DecodeAttention: out of memory");
  OrtStatus *st = NULL;
  for (int64_t b = 0; b < B && !st; b++) {
    int64_t L = seqlens[b];   /* the new token's row in the cache */
    const float *qb = qkv + b * (H + 2 * KV) * D, *kn = qb + H * D, *vn = kn + KV * D;
    const float *c = cosc + pos[b] * (D / 2), *s = sinc + pos[b] * (D / 2);
    float *K = ck + b * KV * M * D, *V = cv + b * KV * M * D;
    for (int64_t h = 0; h < H; h++) rotate(q + h * D, qb + h * D, c, s, D, (int)k->interleaved);
    for (int64_t g = 0; g < KV; g++) {
      rotate(K + (g * M + L) * D, kn + g * D, c, s, D, (int)k->interleaved);
      memcpy(V + (g * M + L) * D, vn + g * D, (size_t)D * sizeof(float));
    }
    Call call = {q, K, V, M, D, G, KV, L + 1, L / CHUNK + 1, k->scale, q + H * D};
    size_t tasks = (size_t)(KV * call.chunks);
    if (tasks < 4) {   /* the pool's hand-off costs more than it saves */
      for (size_t i = 0; i < tasks; i++) attend_task(&call, i);
    } else {
      st = ort->KernelContext_ParallelFor(ctx, attend_task, tasks, 0, &call);
    }
    if (st) break;
    merge_chunks(&call, out + b * row);
    if (blk) block_means(out + b * row + H * D, out + b * row, H * D, blk);
  }
  free(q);
  return st;
}

/* -- GatedMeans --------------------------------------------------------------------------- */

/* the "block" attribute of the ops that append block means: a positive multiple of 8 */
static OrtStatus *block_attribute(const OrtKernelInfo *info, int64_t *block) {
  CHECK(ort->KernelInfoGetAttribute_int64(info, "block", block));
  if (*block <= 0 || *block % LANES)
    FAIL("edge_runtime", "the block attribute must be a positive multiple of 8");
  return NULL;
}

typedef struct {   /* the kernels that append block means: GatedMeans, SkipNormMeans */
  float eps;       /* SkipNormMeans' epsilon */
  int64_t block;
} Blocks;

static OrtStatus *blocks_create(const OrtCustomOp *op, const OrtApi *api,
                                const OrtKernelInfo *info, void **out) {
  (void)op; (void)api;
  Blocks *k = calloc(1, sizeof *k);
  if (!k) return ort->CreateStatus(ORT_FAIL, "edge_runtime: out of memory");
  OrtStatus *st = ort->KernelInfoGetAttribute_float(info, "epsilon", &k->eps);
  if (st) ort->ReleaseStatus(st);   /* GatedMeans has none */
  st = block_attribute(info, &k->block);
  if (st) {
    free(k);
    return st;
  }
  *out = k;
  return NULL;
}

static OrtStatus *gated_compute(void *kernel, OrtKernelContext *ctx) {
  const Blocks *k = kernel;
  const float *x;
  int64_t dims[4];
  size_t nd;
  CHECK(input(ctx, 0, (const void **)&x, dims, &nd));
  int64_t blk = k->block, F = nd ? dims[nd - 1] / 2 : 0, rows = 1;
  if (nd < 1 || F <= 0 || dims[nd - 1] % 2 || F % blk)
    FAIL("GatedMeans", "the last dimension must be two halves of whole blocks");
  for (size_t i = 0; i + 1 < nd; i++) rows *= dims[i];
  dims[nd - 1] = F + F / blk;
  OrtValue *o;
  float *y;
  CHECK(ort->KernelContext_GetOutput(ctx, 0, dims, nd, &o));
  CHECK(ort->GetTensorMutableData(o, (void **)&y));
  for (int64_t r = 0; r < rows; r++) {
    const float *gate = x + r * 2 * F, *up = gate + F;
    float *yr = y + r * (F + F / blk);
    for (int64_t i = 0; i < F; i += LANES) store(yr + i, silu(load(gate + i)) * load(up + i));
    block_means(yr + F, yr, F, blk);
  }
  return NULL;
}

/* -- SkipNormMeans ------------------------------------------------------------------------ */

/* s = x + skip; y = s / sqrt(mean(s^2) + eps) * gamma, then y's block means appended;
 * outputs (y with its means, s): SkipSimplifiedLayerNormalization, AveragePool and Concat */
static OrtStatus *norm_compute(void *kernel, OrtKernelContext *ctx) {
  const Blocks *k = kernel;
  const float *x, *skip, *gamma;
  int64_t dx[4], ds[4], dg[4];
  size_t nx, ns, ng;
  CHECK(input(ctx, 0, (const void **)&x, dx, &nx));
  CHECK(input(ctx, 1, (const void **)&skip, ds, &ns));
  CHECK(input(ctx, 2, (const void **)&gamma, dg, &ng));
  int64_t N = nx ? dx[nx - 1] : 0, blk = k->block, rows = 1;
  if (nx < 1 || ns != nx || memcmp(dx, ds, nx * sizeof *dx) || ng != 1 || dg[0] != N ||
      N <= 0 || N % blk)
    FAIL("SkipNormMeans", "input and skip must share a shape whose last dimension, gamma's, is whole blocks");
  for (size_t i = 0; i + 1 < nx; i++) rows *= dx[i];
  int64_t dy[4];
  memcpy(dy, dx, sizeof dy);
  dy[nx - 1] = N + N / blk;
  OrtValue *o0, *o1;
  float *y, *sum;
  CHECK(ort->KernelContext_GetOutput(ctx, 0, dy, nx, &o0));
  CHECK(ort->KernelContext_GetOutput(ctx, 1, dx, nx, &o1));
  CHECK(ort->GetTensorMutableData(o0, (void **)&y));
  CHECK(ort->GetTensorMutableData(o1, (void **)&sum));
  for (int64_t r = 0; r < rows; r++) {
    /* in order, as onnxruntime's SkipSimplifiedLayerNormalization computes it: a value
     * rounded apart here moves the int8 activations of the next 4-bit kernel */
    const float *xr = x + r * N, *sr = skip + r * N;
    float *s = sum + r * N, *yr = y + r * (N + N / blk), square = 0.f;
    for (int64_t i = 0; i < N; i++) {
      s[i] = xr[i] + sr[i];
      square += s[i] * s[i];
    }
    float rms = sqrtf(square / (float)N + k->eps);
    for (int64_t i = 0; i < N; i++) yr[i] = s[i] / rms * gamma[i];
    block_means(yr + N, yr, N, blk);
  }
  return NULL;
}

/* -- registration ------------------------------------------------------------------------- */

static void kernel_free(void *kernel) { free(kernel); }
static const char *cpu(const OrtCustomOp *op) { (void)op; return "CPUExecutionProvider"; }
static const char *attention_name(const OrtCustomOp *op) { (void)op; return "DecodeAttention"; }
static const char *gated_name(const OrtCustomOp *op) { (void)op; return "GatedMeans"; }
static const char *norm_name(const OrtCustomOp *op) { (void)op; return "SkipNormMeans"; }
static ONNXTensorElementDataType attention_input(const OrtCustomOp *op, size_t i) {
  (void)op;
  return i == 3 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32
       : i == 6 ? ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 : ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static ONNXTensorElementDataType float32(const OrtCustomOp *op, size_t i) {
  (void)op; (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static size_t seven(const OrtCustomOp *op) { (void)op; return 7; }
static size_t three(const OrtCustomOp *op) { (void)op; return 3; }
static size_t two(const OrtCustomOp *op) { (void)op; return 2; }
static size_t single(const OrtCustomOp *op) { (void)op; return 1; }
static OrtCustomOpInputOutputCharacteristic required(const OrtCustomOp *op, size_t i) {
  (void)op; (void)i;
  return INPUT_OUTPUT_REQUIRED;
}
static OrtMemType host(const OrtCustomOp *op, size_t i) { (void)op; (void)i; return OrtMemTypeDefault; }
static int one(const OrtCustomOp *op) { (void)op; return 1; }
static int zero(const OrtCustomOp *op) { (void)op; return 0; }

static OrtCustomOp attention_op, gated_op, norm_op;

typedef const char *(*NameFn)(const OrtCustomOp *);
typedef ONNXTensorElementDataType (*TypeFn)(const OrtCustomOp *, size_t);
typedef size_t (*CountFn)(const OrtCustomOp *);
typedef OrtStatus *(*CreateFn)(const OrtCustomOp *, const OrtApi *, const OrtKernelInfo *, void **);
typedef OrtStatus *(*ComputeFn)(void *, OrtKernelContext *);

static void describe(OrtCustomOp *op, NameFn name, TypeFn input_type, CountFn inputs,
                     CountFn outputs, CreateFn create, ComputeFn compute) {
  memset(op, 0, sizeof *op);
  op->version = ORT_API_VERSION;
  op->GetName = name;
  op->GetExecutionProviderType = cpu;
  op->GetInputType = input_type;
  op->GetInputTypeCount = inputs;
  op->GetOutputType = float32;
  op->GetOutputTypeCount = outputs;
  op->KernelDestroy = kernel_free;
  op->GetInputCharacteristic = required;
  op->GetOutputCharacteristic = required;
  op->GetInputMemoryType = host;
  op->GetVariadicInputMinArity = one;
  op->GetVariadicInputHomogeneity = zero;
  op->GetVariadicOutputMinArity = one;
  op->GetVariadicOutputHomogeneity = zero;
  op->CreateKernelV2 = create;
  op->KernelComputeV2 = compute;
}

static void describe_ops(void) {
  describe(&attention_op, attention_name, attention_input, seven, three, attention_create,
           attention_compute);
  describe(&gated_op, gated_name, float32, single, single, blocks_create, gated_compute);
  describe(&norm_op, norm_name, float32, three, two, blocks_create, norm_compute);
}

/* The entry point of SessionOptions.register_custom_ops_library. An onnxruntime older than
 * the header this was built against (ORT_API_VERSION) has no such API: the ops stay
 * unregistered, a model that uses them fails to load, and the engine opens the plain graph. */
static pthread_once_t described = PTHREAD_ONCE_INIT;

OrtStatus *RegisterCustomOps(OrtSessionOptions *options, const OrtApiBase *base) {
  ort = base->GetApi(ORT_API_VERSION);
  if (!ort) return NULL;
  pthread_once(&described, describe_ops);   /* sessions already open read these structs */
  OrtCustomOpDomain *domain;   /* lives as long as the process: sessions keep pointers */
  CHECK(ort->CreateCustomOpDomain("edge_runtime", &domain));
  CHECK(ort->CustomOpDomain_Add(domain, &attention_op));
  CHECK(ort->CustomOpDomain_Add(domain, &gated_op));
  CHECK(ort->CustomOpDomain_Add(domain, &norm_op));
  return ort->AddCustomOpDomain(options, domain);
}
