/*
 * include/tilecore/runtime/c_runtime_api.h — the stable C API of tilecore's runtime: load a
 * compiled model (`.tcx`, docs/executable.md), list its inputs and outputs, run it on TC1 (the
 * simulator's npu device) and the CPU, read its statistics. An application links
 * libtilecore_runtime (`pkg-config --cflags --libs tilecore-runtime`, or CMake's
 * `find_package(tilecore)` and `tilecore::runtime`); docs/deploy.md shows both.
 *
 * Conventions:
 *   - Every function that can fail returns a TCRStatus: kTCROk (0) or an error code. The
 *     error's text, naming what failed and where (the file, the field, the byte, the input),
 *     is TCRGetLastError() on the same thread until its next failing call. No call aborts
 *     the process or lets a C++ exception out, whatever it is given.
 *   - Output pointers come last; on an error they are left as they were.
 *   - Option and statistics structs start with `struct_size` (set it to sizeof the struct, or
 *     use the Init functions), so later versions can add fields without breaking callers.
 *
 * Thread safety: every function may be called from any thread. Calls on one executable may
 * run concurrently (loads, queries, runs: a run keeps its state to itself), except
 * TCRExecutableFree, which must be the handle's last call. Runs on one npu device take turns
 * (the device is one simulated chip); runs on different devices (TCRRunOptions.device) run in
 * parallel.
 *
 * Security: a `.tcx` may hold host code, a shared library that loading it maps with dlopen
 * and runs, so loading an executable runs its code, as loading a `.so` does. Load only
 * executables you trust, or refuse host code (TCRLoadOptions.refuse_host_code), or name the
 * file you expect by its SHA-256 (TCRLoadOptions.expected_sha256), checked before anything
 * in the file is parsed or loaded.
 */
#ifndef TILECORE_RUNTIME_C_RUNTIME_API_H_
#define TILECORE_RUNTIME_C_RUNTIME_API_H_

#include <stddef.h>
#include <stdint.h>

#include "tilecore/ffi/dlpack.h"

#if defined(_WIN32)
#define TILECORE_RUNTIME_DLL __declspec(dllexport)
#else
#define TILECORE_RUNTIME_DLL __attribute__((visibility("default")))
#endif

/*! The version of this API: functions and struct fields are only ever added. */
#define TCR_API_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief What a call returned. */
typedef enum {
  kTCROk = 0,
  kTCRInvalidArgument = 1, /*!< a null pointer, an index out of range, a wrong dtype or shape */
  kTCRIOError = 2,         /*!< a file that cannot be read */
  kTCRFormatError = 3,     /*!< not a `.tcx`, or a truncated, corrupted or invalid one */
  kTCRRefused = 4,         /*!< the load options refuse it (host code, a different SHA-256) */
  kTCRRunError = 5,        /*!< a step failed while running (a TC1 fault, a host kernel's error) */
  kTCROutOfMemory = 6,     /*!< host memory, or the device's DDR for the executable's arena */
  kTCRInternalError = 7,   /*!< a defect of tilecore: please report it with the message */
} TCRStatus;

/*! \brief A loaded executable. Opaque; freed with TCRExecutableFree. */
typedef struct TCRExecutable TCRExecutable;

/*! \brief How to load an executable. Initialise with TCRLoadOptionsInit. */
typedef struct {
  uint32_t struct_size;
  /*! Non-zero: refuse an executable holding host code (a `c` module: a shared library that
   *  loading would dlopen) with kTCRRefused, before any of it is loaded. Default 0. */
  int32_t refuse_host_code;
  /*! NULL, or the file's expected SHA-256 as 64 hexadecimal digits: any other file is
   *  refused with kTCRRefused before it is parsed. Default NULL. */
  const char* expected_sha256;
} TCRLoadOptions;

/*! \brief A named input or output: its element type, shape and size in bytes. */
typedef struct {
  const char* name;     /*!< the model's name for it; valid while the executable lives */
  DLDataType dtype;     /*!< e.g. {kDLFloat, 32, 1} */
  int32_t ndim;         /*!< number of dimensions */
  const int64_t* shape; /*!< ndim sizes; valid while the executable lives */
  uint64_t num_bytes;   /*!< product(shape) x the element's bytes: the buffer a run takes */
} TCRTensorInfo;

/*! \brief How to run. Initialise with TCRRunOptionsInit. */
typedef struct {
  uint32_t struct_size;
  /*! The npu device to run on: 0..15 (default 0). Each device is one simulated TC1. */
  int32_t device;
} TCRRunOptions;

/*! \brief The figures of one run (docs/executable.md, "Statistics", has them all, as JSON). */
typedef struct {
  uint32_t struct_size;
  uint64_t cycles;        /*!< simulated TC1 cycles of the npu steps, summed */
  uint64_t macs;          /*!< multiply-accumulates of the model's ops */
  double mac_utilisation; /*!< npu MACs / (peak MACs per cycle x cycles) */
  double wall_seconds;    /*!< the run's wall time on this machine */
  int32_t steps;          /*!< steps run (npu and host) */
} TCRRunStats;

/*! \brief Default load options: host code allowed, no SHA-256 check. */
TILECORE_RUNTIME_DLL void TCRLoadOptionsInit(TCRLoadOptions* options);
/*! \brief Default run options: npu device 0. */
TILECORE_RUNTIME_DLL void TCRRunOptionsInit(TCRRunOptions* options);
/*! \brief Sets struct_size and zeroes the rest. */
TILECORE_RUNTIME_DLL void TCRRunStatsInit(TCRRunStats* stats);

/*!
 * \brief Loads the `.tcx` at `path` (a regular file). The file is checked whole (checksum,
 * every count and index, the memory plan, the data flow) before the executable is returned.
 * \param options NULL for the defaults.
 * \param out receives the executable, to be freed with TCRExecutableFree.
 * \return kTCRIOError for a file that cannot be read; kTCRFormatError for one that is not a
 *         valid `.tcx` (the message names the field and byte); kTCRRefused per `options`.
 */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableLoadFile(const char* path,
                                                     const TCRLoadOptions* options,
                                                     TCRExecutable** out);

/*! \brief Like TCRExecutableLoadFile, from the file's `size` bytes at `data` (copied). */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableLoadMemory(const void* data, size_t size,
                                                       const TCRLoadOptions* options,
                                                       TCRExecutable** out);

/*! \brief Frees an executable (NULL is ignored). No call on it may be running or follow. */
TILECORE_RUNTIME_DLL void TCRExecutableFree(TCRExecutable* exe);

/*! \brief The number of inputs (or outputs) of the model. */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableNumInputs(const TCRExecutable* exe, int32_t* out);
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableNumOutputs(const TCRExecutable* exe, int32_t* out);

/*! \brief Input (or output) `index`, in the order runs take them (the model's order). */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableInputInfo(const TCRExecutable* exe, int32_t index,
                                                      TCRTensorInfo* out);
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableOutputInfo(const TCRExecutable* exe, int32_t index,
                                                       TCRTensorInfo* out);

/*!
 * \brief The number of buckets: programs for several input shapes (docs/executable.md,
 * "Buckets"); 1 for most executables. Bucket 0 is what the Info functions above describe.
 */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableNumBuckets(const TCRExecutable* exe, int32_t* out);

/*! \brief Input (or output) `index` of bucket `bucket` (its shape is that bucket's). */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableBucketInputInfo(const TCRExecutable* exe,
                                                            int32_t bucket, int32_t index,
                                                            TCRTensorInfo* out);
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableBucketOutputInfo(const TCRExecutable* exe,
                                                             int32_t bucket, int32_t index,
                                                             TCRTensorInfo* out);

/*! \brief The index of the input (or output) named `name`; kTCRInvalidArgument if none is. */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableFindInput(const TCRExecutable* exe, const char* name,
                                                      int32_t* out);
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableFindOutput(const TCRExecutable* exe, const char* name,
                                                       int32_t* out);

/*!
 * \brief Runs the model on caller-owned host memory.
 * \param inputs one pointer per input, in TCRExecutableInputInfo's order, each to num_bytes
 *        bytes of the input's elements (row-major, the machine's byte order); only read.
 * \param outputs one pointer per output, likewise; each receives the output's num_bytes.
 * \param options NULL for the defaults.
 * \param stats NULL, or receives the figures of this run.
 * \return kTCRRunError when a step fails (the message names the step, its node and, for a TC1
 *         fault, the kernel's source line); kTCROutOfMemory when the arena does not fit the
 *         device's DDR (the message names the configuration that makes room).
 */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableRun(TCRExecutable* exe, const void* const* inputs,
                                                void* const* outputs, const TCRRunOptions* options,
                                                TCRRunStats* stats);

/*!
 * \brief Runs the model on DLPack tensors: CPU memory, compact row-major (strides NULL or
 * those of a compact array), each of exactly its input's (output's) dtype and shape. An
 * executable with buckets (docs/executable.md, "Buckets") runs the bucket the inputs' shapes
 * take; the outputs then have that bucket's shapes (cropped to the inputs' batch when a
 * smaller batch runs padded). The Info functions and TCRExecutableRun describe and run bucket 0
 * (TCRExecutableNumBuckets and the BucketInfo functions list the others).
 * \param num_inputs, num_outputs must equal the model's counts.
 */
TILECORE_RUNTIME_DLL TCRStatus
TCRExecutableRunDLTensors(TCRExecutable* exe, const DLTensor* const* inputs, int32_t num_inputs,
                          const DLTensor* const* outputs, int32_t num_outputs,
                          const TCRRunOptions* options, TCRRunStats* stats);

/*!
 * \brief The statistics of the last run of `exe` that finished (from any thread), as JSON
 * (docs/executable.md, "Statistics": cycles, per-op figures, bytes moved).
 * \param buffer receives at most `capacity` bytes: the text and a NUL (may be NULL when
 *        `capacity` is 0, to ask for the length).
 * \param length receives the text's length (without the NUL): a `capacity` below length + 1
 *        truncates the copy, and the call still succeeds.
 * \return kTCRInvalidArgument before the first run.
 */
TILECORE_RUNTIME_DLL TCRStatus TCRExecutableStatsJSON(const TCRExecutable* exe, char* buffer,
                                                      size_t capacity, size_t* length);

/*!
 * \brief Configures npu device `device` from a target string, e.g. "npu -cores=4 -ddr=1GiB"
 * (docs/runtime.md, "Targets"). Fails while the device holds arrays (a run in progress).
 */
TILECORE_RUNTIME_DLL TCRStatus TCRDeviceConfigure(int32_t device, const char* target);

/*! \brief The message of this thread's last failed call ("" before any). Valid until the
 *  thread's next call into this API. */
TILECORE_RUNTIME_DLL const char* TCRGetLastError(void);

/*! \brief The name of a status ("kTCRFormatError"); "unknown status" for other values. */
TILECORE_RUNTIME_DLL const char* TCRStatusName(TCRStatus status);

/*! \brief tilecore's version ("0.1.0"). */
TILECORE_RUNTIME_DLL const char* TCRVersion(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TILECORE_RUNTIME_C_RUNTIME_API_H_
