/*
 * examples/runtime/npy.h — reads and writes NumPy's `.npy` files (format versions 1 to 3) for
 * the runtime's example applications: little-endian, C-ordered arrays of the element types a
 * `.tcx` takes. Header-only C; every failure returns non-zero with a message naming the file
 * and what is wrong in it.
 */
#ifndef TILECORE_EXAMPLES_NPY_H_
#define TILECORE_EXAMPLES_NPY_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilecore/ffi/dlpack.h"

#define NPY_MAX_DIMS 8

typedef struct {
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[NPY_MAX_DIMS];
  void* data; /* malloc'ed; free with npy_free */
  uint64_t num_bytes;
} npy_array;

static inline void npy_free(npy_array* a) {
  free(a->data);
  a->data = NULL;
}

/* The element types, as DLPack names them and as NumPy's descr does. */
static const struct {
  DLDataType dtype;
  const char* descr;
} npy_types[] = {{{kDLFloat, 32, 1}, "<f4"}, {{kDLFloat, 64, 1}, "<f8"}, {{kDLFloat, 16, 1}, "<f2"},
                 {{kDLInt, 8, 1}, "|i1"},    {{kDLInt, 16, 1}, "<i2"},   {{kDLInt, 32, 1}, "<i4"},
                 {{kDLInt, 64, 1}, "<i8"},   {{kDLUInt, 8, 1}, "|u1"},   {{kDLUInt, 16, 1}, "<u2"},
                 {{kDLUInt, 32, 1}, "<u4"},  {{kDLUInt, 64, 1}, "<u8"},  {{kDLBool, 8, 1}, "|b1"}};

/* NumPy's descr of a DLPack type ("<f4", "|i1", ...), or NULL when it has none. */
static inline const char* npy_descr(DLDataType t) {
  size_t i;
  for (i = 0; i < sizeof npy_types / sizeof npy_types[0]; ++i) {
    const DLDataType* d = &npy_types[i].dtype;
    if (d->code == t.code && d->bits == t.bits && d->lanes == t.lanes) return npy_types[i].descr;
  }
  return NULL;
}

static inline int npy_fail(char* err, size_t errlen, const char* path, const char* what) {
  snprintf(err, errlen, "%s: %s", path, what);
  return 1;
}

/* The value of `key` in the header's Python dict literal: a pointer just after "'key':". */
static inline const char* npy_find(const char* header, const char* key) {
  char quoted[32];
  const char* p;
  snprintf(quoted, sizeof quoted, "'%s'", key);
  p = strstr(header, quoted);
  if (p == NULL) return NULL;
  p += strlen(quoted);
  while (*p == ' ') ++p;
  if (*p != ':') return NULL;
  ++p;
  while (*p == ' ') ++p;
  return p;
}

/* Reads `path` into `out`. Returns 0, or 1 with a message in `err`. */
static inline int npy_read(const char* path, npy_array* out, char* err, size_t errlen) {
  unsigned char pre[12];
  uint64_t header_len, count = 1, want;
  size_t pre_len;
  char* header;
  const char *p, *descr_end;
  char descr[8];
  FILE* f = fopen(path, "rb");
  memset(out, 0, sizeof *out);
  if (f == NULL) return npy_fail(err, errlen, path, "cannot open the file");
  if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return npy_fail(err, errlen, path, "not an .npy file (no \\x93NUMPY magic)");
  }
  if (pre[6] < 1 || pre[6] > 3) {
    fclose(f);
    return npy_fail(err, errlen, path, "unsupported .npy format version");
  }
  pre_len = pre[6] == 1 ? 2 : 4;
  if (fread(pre + 8, 1, pre_len, f) != pre_len) {
    fclose(f);
    return npy_fail(err, errlen, path, "truncated header length");
  }
  header_len = pre_len == 2 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                            : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
                                  (uint64_t)pre[11] << 24;
  if (header_len > 1 << 20) {
    fclose(f);
    return npy_fail(err, errlen, path, "header longer than 1 MiB");
  }
  header = (char*)malloc(header_len + 1);
  if (header == NULL || fread(header, 1, header_len, f) != header_len) {
    free(header);
    fclose(f);
    return npy_fail(err, errlen, path, "truncated header");
  }
  header[header_len] = '\0';
  p = npy_find(header, "descr");
  if (p == NULL || *p != '\'' || (descr_end = strchr(p + 1, '\'')) == NULL ||
      descr_end - p - 1 >= (long)sizeof descr) {
    free(header);
    fclose(f);
    return npy_fail(err, errlen, path, "the header has no 'descr' of a plain type");
  }
  memcpy(descr, p + 1, (size_t)(descr_end - p - 1));
  descr[descr_end - p - 1] = '\0';
  /* "<i1" and "|i1" are the same one-byte type. */
  if (strlen(descr) == 3 && descr[0] == '<' && descr[2] == '1') descr[0] = '|';
  out->dtype.lanes = 0;
  {
    size_t k;
    for (k = 0; k < sizeof npy_types / sizeof npy_types[0]; ++k) {
      if (strcmp(npy_types[k].descr, descr) == 0) out->dtype = npy_types[k].dtype;
    }
  }
  if (out->dtype.lanes == 0) {
    char what[64];
    free(header);
    fclose(f);
    snprintf(what, sizeof what, "element type '%s' (big-endian or not a plain number)", descr);
    return npy_fail(err, errlen, path, what);
  }
  p = npy_find(header, "fortran_order");
  if (p == NULL || strncmp(p, "False", 5) != 0) {
    free(header);
    fclose(f);
    return npy_fail(err, errlen, path, "not a C-ordered array (fortran_order is not False)");
  }
  p = npy_find(header, "shape");
  if (p == NULL || *p != '(') {
    free(header);
    fclose(f);
    return npy_fail(err, errlen, path, "the header has no 'shape'");
  }
  ++p;
  for (;;) {
    char* end;
    long long d;
    while (*p == ' ' || *p == ',') ++p;
    if (*p == ')') break;
    d = strtoll(p, &end, 10);
    if (end == p || d < 0 || out->ndim == NPY_MAX_DIMS ||
        (d > 0 && count > (1ull << 40) / (uint64_t)d)) {
      free(header);
      fclose(f);
      return npy_fail(err, errlen, path,
                      "a bad 'shape' (negative, too large, or over 8 dimensions)");
    }
    out->shape[out->ndim++] = d;
    count *= (uint64_t)d;
    p = end;
  }
  free(header);
  want = count * (out->dtype.bits / 8);
  out->data = malloc(want ? want : 1);
  if (out->data == NULL) {
    fclose(f);
    return npy_fail(err, errlen, path, "out of memory");
  }
  if (fread(out->data, 1, want, f) != want) {
    npy_free(out);
    fclose(f);
    return npy_fail(err, errlen, path, "fewer bytes of data than the shape needs");
  }
  out->num_bytes = want;
  fclose(f);
  return 0;
}

/* Writes `ndim` sizes of `dtype` elements at `data` to `path` (format version 1). */
static inline int npy_write(const char* path, DLDataType dtype, int32_t ndim, const int64_t* shape,
                            const void* data, uint64_t num_bytes, char* err, size_t errlen) {
  char header[256];
  char dims[160] = "";
  size_t len, pad;
  int32_t i;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  FILE* f;
  const char* descr = npy_descr(dtype);
  if (descr == NULL) return npy_fail(err, errlen, path, "an element type .npy cannot hold");
  for (i = 0; i < ndim; ++i) {
    char d[24];
    snprintf(d, sizeof d, "%lld,%s", (long long)shape[i], ndim == 1 ? "" : " ");
    strncat(dims, d, sizeof dims - strlen(dims) - 1);
  }
  len = (size_t)snprintf(header, sizeof header,
                         "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
  /* Data starts at a multiple of 64 bytes; the header ends with a newline. */
  pad = 64 - (10 + len + 1) % 64;
  if (len + pad + 1 >= sizeof header) return npy_fail(err, errlen, path, "header too long");
  memset(header + len, ' ', pad);
  header[len + pad] = '\n';
  len += pad + 1;
  pre[8] = (unsigned char)(len & 0xff);
  pre[9] = (unsigned char)(len >> 8);
  f = fopen(path, "wb");
  if (f == NULL) return npy_fail(err, errlen, path, "cannot create the file");
  if (fwrite(pre, 1, 10, f) != 10 || fwrite(header, 1, len, f) != len ||
      fwrite(data, 1, num_bytes, f) != num_bytes) {
    fclose(f);
    return npy_fail(err, errlen, path, "writing failed");
  }
  return fclose(f) == 0 ? 0 : npy_fail(err, errlen, path, "writing failed");
}

#endif /* TILECORE_EXAMPLES_NPY_H_ */
