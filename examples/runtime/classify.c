/*
 * examples/runtime/classify.c — an image classifier in C on tilecore's runtime library: loads
 * a compiled model (`.tcx`), reads its input from an `.npy` file, runs it on TC1 (the
 * simulator) and prints the top classes of its first output with their scores, as
 * `tilecore run MODEL.tcx --inputs in.npz --top 5` prints them.
 *
 *   cc classify.c $(pkg-config --cflags --libs tilecore-runtime) -o classify
 *   ./classify MODEL.tcx INPUT.npy [--top K] [--device N] [--refuse-host-code] [--sha256 HEX]
 *
 * Exit status: 0, or 1 with a message naming what failed (the file, the input, the step).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "tilecore/runtime/c_runtime_api.h"

static int usage(void) {
  fprintf(stderr,
          "usage: classify MODEL.tcx INPUT.npy [--top K] [--device N] [--refuse-host-code] "
          "[--sha256 HEX]\n");
  return 2;
}

/* Element `i` of an array of `dtype` as a double (the scores are ranked as doubles). */
static double element(DLDataType dtype, const void* data, uint64_t i) {
  const unsigned char* p = (const unsigned char*)data;
  if (dtype.code == kDLFloat && dtype.bits == 32) return ((const float*)data)[i];
  if (dtype.code == kDLFloat && dtype.bits == 64) return ((const double*)data)[i];
  if (dtype.code == kDLFloat && dtype.bits == 16) {
    /* IEEE half to single: re-bias the exponent; subnormal halves are exact multiples of 2^-24. */
    uint16_t h = ((const uint16_t*)data)[i];
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 31, mant = h & 1023, bits;
    float f;
    if (exp == 0) return (h & 0x8000 ? -1.0 : 1.0) * mant / 16777216.0;
    bits = sign | (exp == 31 ? 0x7f800000u | mant << 13 : (exp + 112) << 23 | mant << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (dtype.code == kDLBfloat && dtype.bits == 16) {
    uint32_t bits = (uint32_t)((const uint16_t*)data)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (dtype.code == kDLInt && dtype.bits == 8) return (double)((const int8_t*)data)[i];
  if (dtype.code == kDLInt && dtype.bits == 16) return (double)((const int16_t*)data)[i];
  if (dtype.code == kDLInt && dtype.bits == 32) return (double)((const int32_t*)data)[i];
  if (dtype.code == kDLInt && dtype.bits == 64) return (double)((const int64_t*)data)[i];
  if (dtype.code == kDLUInt && dtype.bits == 16) return (double)((const uint16_t*)data)[i];
  if (dtype.code == kDLUInt && dtype.bits == 32) return (double)((const uint32_t*)data)[i];
  if (dtype.code == kDLUInt && dtype.bits == 64) return (double)((const uint64_t*)data)[i];
  return (double)p[i]; /* uint8, bool */
}

/* "float32[1, 1000]" */
static void describe(const TCRTensorInfo* t, char* out, size_t len) {
  static const char* kCodes[] = {"int", "uint", "float", "", "bfloat", "", "bool"};
  int32_t d;
  size_t n;
  const char* code = t->dtype.code < 7 ? kCodes[t->dtype.code] : "?";
  if (t->dtype.code == kDLBool)
    n = (size_t)snprintf(out, len, "bool[");
  else
    n = (size_t)snprintf(out, len, "%s%d[", code, t->dtype.bits);
  for (d = 0; d < t->ndim && n < len; ++d)
    n += (size_t)snprintf(out + n, len - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (n < len) snprintf(out + n, len - n, "]");
}

int main(int argc, char** argv) {
  const char *model = NULL, *input = NULL;
  int top = 5, i, k;
  TCRLoadOptions load;
  TCRRunOptions run;
  TCRExecutable* exe = NULL;
  TCRTensorInfo in_info, out_info;
  int32_t num_inputs = 0, num_outputs = 0;
  npy_array x;
  char err[512], want[160], got[160];
  void** outputs;
  const void* inputs[1];
  char* chosen;
  uint64_t count, j;

  TCRLoadOptionsInit(&load);
  TCRRunOptionsInit(&run);
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) {
      top = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      run.device = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--refuse-host-code") == 0) {
      load.refuse_host_code = 1;
    } else if (strcmp(argv[i], "--sha256") == 0 && i + 1 < argc) {
      load.expected_sha256 = argv[++i];
    } else if (argv[i][0] == '-') {
      return usage();
    } else if (model == NULL) {
      model = argv[i];
    } else if (input == NULL) {
      input = argv[i];
    } else {
      return usage();
    }
  }
  if (model == NULL || input == NULL || top < 1) return usage();

  if (TCRExecutableLoadFile(model, &load, &exe) != kTCROk) {
    fprintf(stderr, "classify: %s\n", TCRGetLastError());
    return 1;
  }
  TCRExecutableNumInputs(exe, &num_inputs);
  TCRExecutableNumOutputs(exe, &num_outputs);
  if (num_inputs != 1 || num_outputs < 1) {
    fprintf(stderr, "classify: %s has %d inputs and %d outputs; one input is needed\n", model,
            num_inputs, num_outputs);
    TCRExecutableFree(exe);
    return 1;
  }
  TCRExecutableInputInfo(exe, 0, &in_info);
  if (npy_read(input, &x, err, sizeof err) != 0) {
    fprintf(stderr, "classify: %s\n", err);
    TCRExecutableFree(exe);
    return 1;
  }
  {
    TCRTensorInfo as_read = in_info;
    as_read.dtype = x.dtype;
    as_read.ndim = x.ndim;
    as_read.shape = x.shape;
    describe(&in_info, want, sizeof want);
    describe(&as_read, got, sizeof got);
    if (strcmp(want, got) != 0) {
      fprintf(stderr, "classify: %s holds %s; the input `%s` of %s is %s\n", input, got,
              in_info.name, model, want);
      npy_free(&x);
      TCRExecutableFree(exe);
      return 1;
    }
  }

  /* One buffer per output, as the signature sizes them. */
  outputs = (void**)calloc((size_t)num_outputs, sizeof(void*));
  for (i = 0; i < num_outputs; ++i) {
    TCRExecutableOutputInfo(exe, i, &out_info);
    outputs[i] = malloc(out_info.num_bytes ? out_info.num_bytes : 1);
  }
  inputs[0] = x.data;
  if (TCRExecutableRun(exe, inputs, outputs, &run, NULL) != kTCROk) {
    fprintf(stderr, "classify: %s\n", TCRGetLastError());
    for (i = 0; i < num_outputs; ++i) free(outputs[i]);
    free(outputs);
    npy_free(&x);
    TCRExecutableFree(exe);
    return 1;
  }

  /* The top classes of output 0: highest score first, the lower index first among equal
   * scores, NaN never chosen before a number. */
  TCRExecutableOutputInfo(exe, 0, &out_info);
  count = out_info.num_bytes / (out_info.dtype.bits / 8 ? out_info.dtype.bits / 8 : 1);
  if ((uint64_t)top > count) top = (int)count;
  chosen = (char*)calloc(count ? count : 1, 1);
  describe(&out_info, got, sizeof got);
  printf("top-%d of `%s` (%s):\n", top, out_info.name, got);
  for (k = 0; k < top; ++k) {
    uint64_t best = count;
    double best_v = 0;
    for (j = 0; j < count; ++j) {
      double v = element(out_info.dtype, outputs[0], j);
      if (chosen[j]) continue;
      /* v != v: v is NaN */
      if (best == count || (best_v != best_v && v == v) || (v == v && v > best_v)) {
        best = j;
        best_v = v;
      }
    }
    chosen[best] = 1;
    printf("%3d. class %llu  score %.6g\n", k + 1, (unsigned long long)best, best_v);
  }
  free(chosen);
  for (i = 0; i < num_outputs; ++i) free(outputs[i]);
  free(outputs);
  npy_free(&x);
  TCRExecutableFree(exe);
  return 0;
}
