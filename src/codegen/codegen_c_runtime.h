// src/codegen/codegen_c_runtime.h — C runtime helpers the c target embeds in every
// generated file after the conversion helpers: TC1's engines, run synchronously.
//
// The semantics are those of docs/tc1.md and of the simulator (src/sim): element
// types use TC1's dtype codes (i8=0 u8=1 i16=2 u16=3 i32=4 u32=5 f16=6 bf16=7
// f32=8 bool=9); conversions follow arch/numeric.h (float -> float rounds to
// nearest even via f32, float -> int rounds to nearest even and saturates, NaN
// -> 0, int -> int saturates); the vector engine computes integers exactly and
// saturates, floats in double rounded once (via f32), float sums in f32; the
// matrix engine accumulates i8 products in wrapping i32 and float products in
// f32, k ascending. Sources are read completely before the destination is
// written, as the engines behave when operands overlap.
#pragma once

namespace tilecore::codegen {

inline constexpr const char* kCRuntimeTile = R"(
/* ---- TC1 engines (synchronous) ------------------------------------------------------------- */
enum { TC_I8 = 0, TC_U8, TC_I16, TC_U16, TC_I32, TC_U32, TC_F16, TC_BF16, TC_F32, TC_BOOL };
static const int tc_dtype_size[10] = {1, 1, 2, 2, 4, 4, 2, 2, 4, 1};
static inline int tc_is_float(int dt) { return dt == TC_F16 || dt == TC_BF16 || dt == TC_F32; }
static inline int64_t tc_int_min(int dt) {
  return dt == TC_I8 ? -128 : dt == TC_I16 ? -32768 : dt == TC_I32 ? -2147483647LL - 1 : 0;
}
static inline int64_t tc_int_max(int dt) {
  switch (dt) {
    case TC_I8: return 127; case TC_U8: return 255; case TC_I16: return 32767; case TC_U16: return 65535;
    case TC_I32: return 2147483647LL; case TC_U32: return 4294967295LL; case TC_BOOL: return 1; default: return 0;
  }
}
static inline int64_t tc_sat(int dt, int64_t v) {
  int64_t lo = tc_int_min(dt), hi = tc_int_max(dt);
  return v < lo ? lo : (v > hi ? hi : v);
}
static inline int64_t tc_round_sat(double v, int64_t lo, int64_t hi) {
  if (v != v) return 0;
  if (v <= (double)lo) return lo;
  if (v >= (double)hi) return hi;
  return (int64_t)nearbyint(v);
}
static inline double tc_ld_d(int dt, const void* base, int64_t i);
static inline int64_t tc_ld_i(int dt, const void* base, int64_t i) {
  const uint8_t* p = (const uint8_t*)base + i * tc_dtype_size[dt];
  switch (dt) {
    case TC_I8: return *(const int8_t*)p;
    case TC_U8: return *p;
    case TC_BOOL: return *p != 0;
    case TC_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case TC_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case TC_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TC_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: return tc_round_sat(tc_ld_d(dt, base, i), INT64_MIN / 2, INT64_MAX / 2);
  }
}
static inline double tc_ld_d(int dt, const void* base, int64_t i) {
  const uint8_t* p = (const uint8_t*)base + i * tc_dtype_size[dt];
  switch (dt) {
    case TC_F16: { uint16_t h; memcpy(&h, p, 2); return tc_f16_to_f32(h); }
    case TC_BF16: { uint16_t h; memcpy(&h, p, 2); return tc_bf16_to_f32(h); }
    case TC_F32: { float f; memcpy(&f, p, 4); return f; }
    default: return (double)tc_ld_i(dt, base, i);
  }
}
static inline void tc_st_d(int dt, void* base, int64_t i, double v);
static inline void tc_st_i(int dt, void* base, int64_t i, int64_t v) {
  uint8_t* p = (uint8_t*)base + i * tc_dtype_size[dt];
  switch (dt) {
    case TC_I8: case TC_U8: *p = (uint8_t)tc_sat(dt, v); return;
    case TC_BOOL: *p = v != 0; return;
    case TC_I16: case TC_U16: { uint16_t b = (uint16_t)tc_sat(dt, v); memcpy(p, &b, 2); return; }
    case TC_I32: case TC_U32: { uint32_t b = (uint32_t)tc_sat(dt, v); memcpy(p, &b, 4); return; }
    default: tc_st_d(dt, base, i, (double)v); return;
  }
}
static inline void tc_st_d(int dt, void* base, int64_t i, double v) {
  uint8_t* p = (uint8_t*)base + i * tc_dtype_size[dt];
  switch (dt) {
    case TC_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
    case TC_F16: { uint16_t h = tc_f32_to_f16((float)v); memcpy(p, &h, 2); return; }
    case TC_BF16: { uint16_t h = tc_f32_to_bf16((float)v); memcpy(p, &h, 2); return; }
    case TC_BOOL: *p = !(v != v) && v != 0.0; return;
    default: tc_st_i(dt, base, i, tc_round_sat(v, tc_int_min(dt), tc_int_max(dt))); return;
  }
}
/* One element converted between dtypes (DMA cast, tcvt, vcvt). */
static inline void tc_convert(int ddt, void* d, int64_t di, int sdt, const void* s, int64_t si) {
  if (ddt == sdt) {
    memcpy((uint8_t*)d + di * tc_dtype_size[ddt], (const uint8_t*)s + si * tc_dtype_size[sdt], (size_t)tc_dtype_size[ddt]);
  } else if (tc_is_float(sdt)) {
    tc_st_d(ddt, d, di, tc_ld_d(sdt, s, si));
  } else {
    tc_st_i(ddt, d, di, tc_ld_i(sdt, s, si));
  }
}
/* A scalar value as a dtype would hold it (converted with TC1's rules), read back as double. */
static inline double tc_as_dtype(int dt, double v) {
  uint8_t b[4];
  tc_st_d(dt, b, 0, v);
  return tc_ld_d(dt, b, 0);
}

/* A strided view of up to 8 dimensions; `off` walks it in row-major order. */
typedef struct { void* base; int dt; int rank; int64_t shape[8]; int64_t stride[8]; } tc_tensor;
typedef struct { int64_t idx[8]; int64_t off; } tc_iter;
static inline int64_t tc_count(const tc_tensor* t) {
  int64_t n = 1;
  for (int k = 0; k < t->rank; ++k) n *= t->shape[k];
  return n;
}
static inline void tc_next(const tc_tensor* t, tc_iter* it) {
  for (int k = t->rank - 1; k >= 0; --k) {
    it->off += t->stride[k];
    if (++it->idx[k] < t->shape[k]) return;
    it->off -= t->stride[k] * t->shape[k];
    it->idx[k] = 0;
  }
}
/* The elements of `t` in row-major order, as doubles (floats) or exact integers. */
static double* tc_gather_d(const tc_tensor* t) {
  int64_t n = tc_count(t);
  double* v = (double*)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(t, &it)) v[i] = tc_ld_d(t->dt, t->base, it.off);
  return v;
}
static int64_t* tc_gather_i(const tc_tensor* t) {
  int64_t n = tc_count(t);
  int64_t* v = (int64_t*)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(t, &it)) v[i] = tc_ld_i(t->dt, t->base, it.off);
  return v;
}
static inline int64_t tc_mul_clamped(int64_t a, int64_t b) {
  __int128 p = (__int128)a * (__int128)b;
  if (p > INT64_MAX / 2) return INT64_MAX / 2;
  if (p < INT64_MIN / 2) return INT64_MIN / 2;
  return (int64_t)p;
}
static inline double tc_dmax(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }
static inline double tc_dmin(double a, double b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }

/* An element operation of the table of tile operations (arch/tile_ops.def): the c target
   emits tc_f_<name> (on doubles) and tc_i_<name> (on exact integers) from each row. */
typedef double (*tc_fop)(double x, double y);
typedef int64_t (*tc_iop)(int64_t x, int64_t y);
/* The vector engine's element-wise commands: d = f(a, b) (b != NULL) or f(a, s) (b == NULL:
   the scalar s, first converted to the dtype; unary operations ignore it). The operands
   pair element by element in row-major order. */
static void tc_vec_op(tc_fop f, tc_iop fi, const tc_tensor* d, const tc_tensor* a, const tc_tensor* b, float s) {
  int64_t n = tc_count(d);
  tc_iter it = {{0}, 0};
  if (tc_is_float(d->dt)) {
    double* x = tc_gather_d(a);
    double* y = b ? tc_gather_d(b) : NULL;
    double sv = tc_as_dtype(d->dt, (double)s);
    for (int64_t i = 0; i < n; ++i, tc_next(d, &it)) tc_st_d(d->dt, d->base, it.off, f(x[i], y ? y[i] : sv));
    free(x);
    free(y);
  } else {
    int64_t* x = tc_gather_i(a);
    int64_t* y = b ? tc_gather_i(b) : NULL;
    int64_t sv = (int64_t)tc_as_dtype(d->dt, (double)s);
    for (int64_t i = 0; i < n; ++i, tc_next(d, &it)) tc_st_i(d->dt, d->base, it.off, fi ? fi(x[i], y ? y[i] : sv) : 0);
    free(x);
    free(y);
  }
}
/* tcvt */
static void tc_vec_copy(const tc_tensor* d, const tc_tensor* a) {
  int64_t n = tc_count(d);
  uint8_t* tmp = (uint8_t*)malloc((size_t)(n > 0 ? n : 1) * (size_t)tc_dtype_size[a->dt]);
  tc_iter ia = {{0}, 0}, id = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(a, &ia)) tc_convert(a->dt, tmp, i, a->dt, a->base, ia.off);
  for (int64_t i = 0; i < n; ++i, tc_next(d, &id)) tc_convert(d->dt, d->base, id.off, a->dt, tmp, i);
  free(tmp);
}
/* trequant: saturate(round_even(f32(a) * scale) + zero_point), the product rounded to f32. */
static void tc_vec_requant(const tc_tensor* d, const tc_tensor* a, float scale, int32_t zp) {
  int64_t n = tc_count(d);
  int64_t* x = tc_gather_i(a);
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(d, &it)) {
    float p = (float)(int32_t)x[i] * scale;
    tc_st_i(d->dt, d->base, it.off, tc_round_sat((double)p, INT64_MIN / 4, INT64_MAX / 4) + zp);
  }
  free(x);
}
/* tquant: convert(f32(f32(a * scale) + zero_point)), a f32: tmuls, tadds and tcvt in one. */
static void tc_vec_quant(const tc_tensor* d, const tc_tensor* a, float scale, int32_t zp) {
  int64_t n = tc_count(d);
  double* x = tc_gather_d(a);
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(d, &it)) {
    float p = (float)x[i] * scale;
    float y = p + (float)zp;
    tc_st_d(d->dt, d->base, it.off, (double)y);
  }
  free(x);
}
/* tlut: d = table[a], a's bytes the indices 0..255 (an int8 a: its bit pattern); the table
   holds 256 elements of d's dtype, read in row-major order. */
static void tc_vec_lut(const tc_tensor* d, const tc_tensor* a, const tc_tensor* table) {
  int64_t n = tc_count(d);
  size_t es = (size_t)tc_dtype_size[d->dt];
  uint8_t* entries = (uint8_t*)calloc(256, es);
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < 256 && i < tc_count(table); ++i, tc_next(table, &it))
    tc_convert(d->dt, entries, i, table->dt, table->base, it.off);
  tc_iter ia = {{0}, 0}, id = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(a, &ia), tc_next(d, &id)) {
    uint8_t k = ((const uint8_t*)a->base)[ia.off];
    tc_convert(d->dt, d->base, id.off, d->dt, entries, k);
  }
  free(entries);
}
/* tredsum tredmax tredmin: `a`'s innermost axis folds in index order into `d` (same outer
   dims), acc = f(acc, x) from finit / iinit; float folds round to f32 at every step,
   integers are exact, saturating at the end. */
static void tc_vec_reduce(tc_fop f, tc_iop fi, double finit, int64_t iinit, const tc_tensor* d, const tc_tensor* a) {
  tc_tensor outer = *a;
  int64_t k = a->shape[a->rank - 1], sa = a->stride[a->rank - 1];
  outer.shape[outer.rank - 1] = 1;
  tc_tensor dout = outer;
  for (int i = 0; i < a->rank - 1; ++i) dout.stride[i] = d->stride[i];
  dout.stride[a->rank - 1] = 0;
  int64_t n = tc_count(&outer);
  int isf = tc_is_float(d->dt);
  double* res = (double*)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  int64_t* resi = (int64_t*)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  tc_iter it = {{0}, 0};
  for (int64_t o = 0; o < n; ++o, tc_next(&outer, &it)) {
    if (isf) {
      float acc = (float)finit;
      for (int64_t j = 0; j < k; ++j) acc = (float)f((double)acc, (double)(float)tc_ld_d(a->dt, a->base, it.off + j * sa));
      res[o] = acc;
    } else {
      int64_t acc = iinit;
      for (int64_t j = 0; j < k; ++j) acc = fi(acc, tc_ld_i(a->dt, a->base, it.off + j * sa));
      resi[o] = acc;
    }
  }
  tc_iter id = {{0}, 0};
  for (int64_t o = 0; o < n; ++o, tc_next(&dout, &id)) {
    if (isf) tc_st_d(d->dt, d->base, id.off, res[o]);
    else tc_st_i(d->dt, d->base, id.off, resi[o]);
  }
  free(res);
  free(resi);
}
/* mm / mma: C (M x N, row stride ldc) = (acc ? C : 0) + A (M x K) x B (K x N). */
static void tc_mm(int in_dt, void* c, int64_t ldc, const void* a, int64_t lda, const void* b, int64_t ldb,
                  int64_t m, int64_t n, int64_t k, int acc) {
  size_t cells = (size_t)(m * n > 0 ? m * n : 1);
  if (in_dt == TC_I8) {
    const int8_t* A = (const int8_t*)a;
    const int8_t* B = (const int8_t*)b;
    uint32_t* t = (uint32_t*)calloc(cells, sizeof(uint32_t));
    if (acc)
      for (int64_t i = 0; i < m; ++i) memcpy(t + i * n, (int32_t*)c + i * ldc, (size_t)n * 4);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        uint32_t av = (uint32_t)(int32_t)A[i * lda + kk];
        for (int64_t j = 0; j < n; ++j) t[i * n + j] += av * (uint32_t)(int32_t)B[kk * ldb + j];
      }
    for (int64_t i = 0; i < m; ++i) memcpy((int32_t*)c + i * ldc, t + i * n, (size_t)n * 4);
    free(t);
    return;
  }
  float* t = (float*)calloc(cells, sizeof(float));
  if (acc)
    for (int64_t i = 0; i < m; ++i) memcpy(t + i * n, (float*)c + i * ldc, (size_t)n * 4);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      float av = (float)tc_ld_d(in_dt, a, i * lda + kk);
      for (int64_t j = 0; j < n; ++j) {
        float p = av * (float)tc_ld_d(in_dt, b, kk * ldb + j);
        t[i * n + j] = t[i * n + j] + p;
      }
    }
  for (int64_t i = 0; i < m; ++i) memcpy((float*)c + i * ldc, t + i * n, (size_t)n * 4);
  free(t);
}
/* mm with TC1's fused epilogue (docs/tc1.md, "Matrix engine"): for each (i, j),
   x = acc + bias[j] (i32 wraps), v = f32(x) * (scales ? scales[j] : scale), v += f32(R[i][j]),
   relu, v += f32(zp), clamp [lo, hi], cast to out_dt (integers: round half to even, saturate;
   NaN -> 0); every f32 operation rounds once. Stored at o with row stride ldo. With acc the
   sums start from the m x n accumulator values (rows of n) stored at o. */
static void tc_mm_epilogue(int in_dt, int out_dt, void* o, int64_t ldo, const void* a, int64_t lda, const void* b,
                           int64_t ldb, int64_t m, int64_t n, int64_t k, const void* bias, float scale,
                           const void* scales, int res_dt, const void* res, int64_t ldr, int relu, int32_t zp,
                           float lo, float hi, int acc) {
  size_t cells = (size_t)(m * n > 0 ? m * n : 1);
  void* t = calloc(cells, 4);
  if (acc) memcpy(t, o, (size_t)(m * n) * 4);
  tc_mm(in_dt, t, n, a, lda, b, ldb, m, n, k, acc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float v;
      if (in_dt == TC_I8) {
        uint32_t x = ((const uint32_t*)t)[i * n + j];
        if (bias) { uint32_t bv; memcpy(&bv, (const uint8_t*)bias + j * 4, 4); x += bv; }
        v = (float)(int32_t)x;
      } else {
        v = ((const float*)t)[i * n + j];
        if (bias) { float bv; memcpy(&bv, (const uint8_t*)bias + j * 4, 4); v = v + bv; }
      }
      float s = scale;
      if (scales) memcpy(&s, (const uint8_t*)scales + j * 4, 4);
      v = v * s;
      if (res) v = v + (float)tc_ld_d(res_dt, res, i * ldr + j);
      if (relu && v < 0.0f) v = 0.0f;
      v = v + (float)zp;
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      if (tc_is_float(out_dt)) tc_st_d(out_dt, o, i * ldo + j, (double)v);
      else tc_st_i(out_dt, o, i * ldo + j, tc_round_sat((double)v, tc_int_min(out_dt), tc_int_max(out_dt)));
    }
  free(t);
}
/* dma.in / dma.out: element i of the destination (row-major) receives element i of the
   source converted to the destination's dtype; the source is read completely first. */
static void tc_dma(const tc_tensor* d, const tc_tensor* s) {
  tc_vec_copy(d, s);
}
/* dma.in with the fill flag: every element receives `v` converted to the dtype. */
static void tc_dma_fill(const tc_tensor* d, double v) {
  int64_t n = tc_count(d);
  uint8_t b[4];
  tc_st_d(d->dt, b, 0, v);
  tc_iter it = {{0}, 0};
  for (int64_t i = 0; i < n; ++i, tc_next(d, &it)) tc_convert(d->dt, d->base, it.off, d->dt, b, 0);
}
/* SIMD saturating lane arithmetic (vadds / vsubs). */
static inline int64_t tc_sat_add(int dt, int64_t a, int64_t b) { return tc_sat(dt, a + b); }
static inline int64_t tc_sat_sub(int dt, int64_t a, int64_t b) { return tc_sat(dt, a - b); }
/* Transcendentals computed in double and rounded once (scalar and SIMD forms). */
static inline float tc_exp(float x) { return (float)exp((double)x); }
static inline float tc_log(float x) { return (float)log((double)x); }
static inline float tc_sqrt(float x) { return (float)sqrt((double)x); }
static inline float tc_rsqrt(float x) { return (float)(1.0 / sqrt((double)x)); }
static inline float tc_recip(float x) { return (float)(1.0 / (double)x); }
static inline float tc_tanh(float x) { return (float)tanh((double)x); }
static inline float tc_sigmoid(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
/* ---- the cores of a cluster as threads (a `cores` loop with tir.barrier) -------------------
   Threads start only once all were created (state 0 -> 1); a thread that cannot be created
   or a core that fails breaks the cluster (state -1), which releases every core waiting at a
   barrier or at the start: no core waits forever for one that will not come. */
typedef struct { pthread_mutex_t mu; pthread_cond_t cv; int n, waiting, gen, state; } tc_cluster;
static void tc_cluster_init(tc_cluster* k, int n) {
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  k->n = n; k->waiting = 0; k->gen = 0; k->state = 0;
}
static void tc_cluster_destroy(tc_cluster* k) { pthread_cond_destroy(&k->cv); pthread_mutex_destroy(&k->mu); }
/* 1: run; -1: broken (kept once set). */
static void tc_cluster_set(tc_cluster* k, int state) {
  pthread_mutex_lock(&k->mu);
  if (k->state >= 0) k->state = state;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
}
/* Each core's first step: 1 when the cluster runs, 0 when it broke before starting. */
static int tc_cluster_start(tc_cluster* k) {
  pthread_mutex_lock(&k->mu);
  while (k->state == 0) pthread_cond_wait(&k->cv, &k->mu);
  int ok = k->state > 0;
  pthread_mutex_unlock(&k->mu);
  return ok;
}
/* tir.barrier: 1 when every core arrived, 0 when the cluster broke meanwhile. */
static int tc_cluster_barrier(tc_cluster* k) {
  pthread_mutex_lock(&k->mu);
  int gen = k->gen;
  if (k->state >= 0) {
    if (++k->waiting == k->n) {
      k->waiting = 0;
      ++k->gen;
      pthread_cond_broadcast(&k->cv);
    } else {
      while (k->gen == gen && k->state >= 0) pthread_cond_wait(&k->cv, &k->mu);
    }
  }
  int ok = k->gen != gen;
  pthread_mutex_unlock(&k->mu);
  return ok;
}
/* ---- calls to the host's global functions (tir.call_packed) ---------------------------------
   The layout of runtime/kernel.h's TCHostArg; the module sets the host entry on load. */
typedef struct {
  int32_t kind, dtype, ndim, reserved;
  int64_t i;
  double f;
  void* data;
  int64_t shape[4], strides[4];
} tc_host_arg;
typedef int32_t (*tc_host_call_fn)(void* ctx, const char* name, int32_t n, const tc_host_arg* args);
static tc_host_call_fn tc_host_entry = 0;
static void* tc_host_ctx = 0;
__attribute__((visibility("default"))) void tc__set_host_call(tc_host_call_fn fn, void* ctx) {
  tc_host_entry = fn;
  tc_host_ctx = ctx;
}
static int32_t tc_host_call(const char* name, int32_t n, const tc_host_arg* args) {
  return tc_host_entry ? tc_host_entry(tc_host_ctx, name, n, args) : -1;
}
)";

}  // namespace tilecore::codegen
