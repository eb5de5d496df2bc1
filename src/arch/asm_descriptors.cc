// src/arch/asm_descriptors.cc — the .dmadesc / .vecdesc / .mmdesc directives.
//
// Each takes `key=value` pairs (values: expressions, dtype names, floats or
// [lists]), fills the descriptor with the documented defaults (contiguous
// strides; the DMA source contiguous over the unpadded window; an epilogue when
// any epilogue key is given) and returns its bytes.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "asm_internal.h"
#include "tilecore/arch/descriptors.h"
#include "tilecore/arch/numeric.h"

namespace tilecore::arch {

namespace {

std::map<std::string, std::string> key_values(const AsmContext& as, std::string_view s) {
  std::map<std::string, std::string> kv;
  size_t i = 0;
  while (true) {
    while (i < s.size() && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ',')) ++i;
    if (i >= s.size()) break;
    size_t k0 = i;
    while (i < s.size() && is_ident_char(s[i])) ++i;
    std::string key(s.substr(k0, i - k0));
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (key.empty() || i >= s.size() || s[i] != '=')
      as.error("expected key=value, got '" + std::string(s.substr(k0)) + "'");
    ++i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t v0 = i;
    if (i < s.size() && s[i] == '[') {
      size_t close = s.find(']', i);
      if (close == std::string_view::npos) as.error("missing ']' in value of '" + key + "'");
      i = close + 1;
    } else {
      int depth = 0;
      while (i < s.size() && (depth > 0 || !std::isspace(static_cast<unsigned char>(s[i])))) {
        if (s[i] == '(') ++depth;
        if (s[i] == ')') --depth;
        ++i;
      }
    }
    if (kv.count(key)) as.error("key '" + key + "' given twice");
    kv[key] = std::string(s.substr(v0, i - v0));
  }
  return kv;
}
std::vector<int64_t> list(const AsmContext& as, const std::string& v, const char* key) {
  std::string_view s = trim(v);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']')
    as.error(std::string("'") + key + "' needs a list like [a, b]");
  std::vector<int64_t> out;
  for (auto e : as.split(s.substr(1, s.size() - 2))) out.push_back(as.eval(e));
  if (out.empty() || out.size() > 4) as.error(std::string("'") + key + "' needs 1 to 4 entries");
  return out;
}
DType dtype_value(const AsmContext& as, const std::string& v, const char* key) {
  auto d = parse_dtype(trim(v));
  if (!d) as.error(std::string("'") + key + "': unknown dtype '" + v + "'");
  return *d;
}
template <typename T, size_t N>
void fill_dims(const AsmContext& as, std::array<T, N>& dst, const std::vector<int64_t>& v,
               size_t rank, const char* key) {
  if (v.size() != rank)
    as.error(std::string("'") + key + "' has " + std::to_string(v.size()) + " entries, shape has " +
             std::to_string(rank));
  for (size_t i = 0; i < v.size(); ++i) dst[i] = T(v[i]);
}
// The strides of a contiguous `shape`; an error when one does not fit the descriptor's 32 bits.
std::array<int32_t, 4> contiguous(const AsmContext& as, const std::array<uint32_t, 4>& shape,
                                  size_t rank) {
  std::array<int32_t, 4> st{0, 0, 0, 0};
  int64_t s = 1;
  for (size_t i = rank; i-- > 0;) {
    if (s > std::numeric_limits<int32_t>::max())
      as.error("shape: a contiguous stride of " + std::to_string(s) +
               " elements does not fit 32 bits (give the strides)");
    st[i] = int32_t(s);
    s *= std::max<int64_t>(shape[i], 1) > std::numeric_limits<int32_t>::max()
             ? int64_t{std::numeric_limits<int32_t>::max()} + 1
             : int64_t(shape[i]);
  }
  return st;
}
void check_keys(const AsmContext& as, const std::map<std::string, std::string>& kv,
                std::initializer_list<const char*> allowed, const char* dir) {
  for (auto& [k, v] : kv) {
    bool ok = false;
    for (const char* a : allowed) ok |= k == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : " ") + a;
      as.error(std::string(dir) + ": unknown key '" + k + "' (keys: " + list + ")");
    }
  }
}

}  // namespace

std::vector<uint8_t> assemble_dmadesc(const AsmContext& as, std::string_view rest) {
  auto kv = key_values(as, rest);
  check_keys(as, kv,
             {"dtype", "src", "dst", "shape", "src_stride", "dst_stride", "pad_lo", "pad_hi",
              "fill", "fill_only"},
             ".dmadesc");
  DmaDesc d;
  if (!kv.count("shape")) as.error(".dmadesc needs shape=[...]");
  auto shape = list(as, kv["shape"], "shape");
  d.rank = uint8_t(shape.size());
  fill_dims(as, d.shape, shape, shape.size(), "shape");
  if (kv.count("dtype")) d.src_dtype = d.dst_dtype = dtype_value(as, kv["dtype"], "dtype");
  if (kv.count("src")) d.src_dtype = dtype_value(as, kv["src"], "src");
  if (kv.count("dst")) d.dst_dtype = dtype_value(as, kv["dst"], "dst");
  if (kv.count("pad_lo"))
    fill_dims(as, d.pad_lo, list(as, kv["pad_lo"], "pad_lo"), d.rank, "pad_lo");
  if (kv.count("pad_hi"))
    fill_dims(as, d.pad_hi, list(as, kv["pad_hi"], "pad_hi"), d.rank, "pad_hi");
  std::array<uint32_t, 4> src_shape = d.shape;
  for (size_t i = 0; i < d.rank; ++i)
    src_shape[i] = uint32_t(std::max<int64_t>(0, int64_t(d.shape[i]) - d.pad_lo[i] - d.pad_hi[i]));
  d.src_stride = contiguous(as, src_shape, d.rank);
  d.dst_stride = contiguous(as, d.shape, d.rank);
  if (kv.count("src_stride"))
    fill_dims(as, d.src_stride, list(as, kv["src_stride"], "src_stride"), d.rank, "src_stride");
  if (kv.count("dst_stride"))
    fill_dims(as, d.dst_stride, list(as, kv["dst_stride"], "dst_stride"), d.rank, "dst_stride");
  if (kv.count("fill")) {
    uint8_t b[4] = {0, 0, 0, 0};
    store_from_double(d.dst_dtype, as.eval_float(kv["fill"]), b);
    std::memcpy(&d.fill_bits, b, 4);
  }
  if (kv.count("fill_only") && as.eval(kv["fill_only"])) d.flags |= DmaDesc::kFill;
  std::string why;
  auto bytes = d.to_bytes();
  if (as.is_final() && !DmaDesc::parse(bytes, &why)) as.error(why);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::vector<uint8_t> assemble_vecdesc(const AsmContext& as, std::string_view rest) {
  auto kv = key_values(as, rest);
  check_keys(as, kv, {"shape", "d_stride", "a_stride", "b_stride", "scalar", "scale", "zp"},
             ".vecdesc");
  VecDesc d;
  if (!kv.count("shape")) as.error(".vecdesc needs shape=[...]");
  auto shape = list(as, kv["shape"], "shape");
  d.rank = uint8_t(shape.size());
  fill_dims(as, d.shape, shape, shape.size(), "shape");
  d.d_stride = d.a_stride = d.b_stride = contiguous(as, d.shape, d.rank);
  if (kv.count("d_stride"))
    fill_dims(as, d.d_stride, list(as, kv["d_stride"], "d_stride"), d.rank, "d_stride");
  if (kv.count("a_stride"))
    fill_dims(as, d.a_stride, list(as, kv["a_stride"], "a_stride"), d.rank, "a_stride");
  if (kv.count("b_stride"))
    fill_dims(as, d.b_stride, list(as, kv["b_stride"], "b_stride"), d.rank, "b_stride");
  if (kv.count("scalar")) d.scalar = float(as.eval_float(kv["scalar"]));
  if (kv.count("scale")) d.scale = float(as.eval_float(kv["scale"]));
  if (kv.count("zp")) d.zero_point = int32_t(as.eval(kv["zp"]));
  auto bytes = d.to_bytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::vector<uint8_t> assemble_mmdesc(const AsmContext& as, std::string_view rest) {
  auto kv = key_values(as, rest);
  check_keys(as, kv,
             {"m", "n", "k", "lda", "ldb", "ldc", "ldo", "out", "act", "bias", "scale", "lo", "hi",
              "zp", "epilogue", "scales", "res", "res_dtype", "ldr"},
             ".mmdesc");
  MmDesc d;
  for (const char* req : {"m", "n", "k"})
    if (!kv.count(req)) as.error(std::string(".mmdesc needs ") + req + "=");
  d.m = uint32_t(as.eval(kv["m"]));
  d.n = uint32_t(as.eval(kv["n"]));
  d.k = uint32_t(as.eval(kv["k"]));
  d.lda = kv.count("lda") ? uint32_t(as.eval(kv["lda"])) : d.k;
  d.ldb = kv.count("ldb") ? uint32_t(as.eval(kv["ldb"])) : d.n;
  d.ldc = kv.count("ldc") ? uint32_t(as.eval(kv["ldc"])) : d.n;
  d.ldo = kv.count("ldo") ? uint32_t(as.eval(kv["ldo"])) : d.n;
  bool epi = false;
  if (kv.count("out")) {
    d.out_dtype = dtype_value(as, kv["out"], "out");
    epi = true;
  }
  if (kv.count("act")) {
    std::string a(trim(kv["act"]));
    if (a == "relu")
      d.act = Activation::Relu;
    else if (a != "none")
      as.error(".mmdesc: unknown activation '" + a + "' (none, relu)");
    epi = true;
  }
  if (kv.count("bias")) {
    d.bias_addr = uint32_t(as.eval(kv["bias"]));
    d.flags |= MmDesc::kBias;
    epi = true;
  }
  if (kv.count("scale")) {
    d.scale = float(as.eval_float(kv["scale"]));
    epi = true;
  }
  if (kv.count("lo")) {
    d.clamp_lo = float(as.eval_float(kv["lo"]));
    epi = true;
  }
  if (kv.count("hi")) {
    d.clamp_hi = float(as.eval_float(kv["hi"]));
    epi = true;
  }
  if (kv.count("zp")) {
    d.zero_point = int32_t(as.eval(kv["zp"]));
    epi = true;
  }
  if (kv.count("scales")) {
    d.scale_addr = uint32_t(as.eval(kv["scales"]));
    d.flags |= MmDesc::kChannelScale;
    epi = true;
  }
  if (kv.count("res")) {
    d.res_addr = uint32_t(as.eval(kv["res"]));
    d.flags |= MmDesc::kResidual;
    d.res_dtype =
        kv.count("res_dtype") ? dtype_value(as, kv["res_dtype"], "res_dtype") : DType::I32;
    d.ldr = kv.count("ldr") ? uint32_t(as.eval(kv["ldr"])) : d.n;
    epi = true;
  } else if (kv.count("res_dtype") || kv.count("ldr")) {
    as.error(".mmdesc: res_dtype= and ldr= need res=");
  }
  if (kv.count("epilogue")) epi = as.eval(kv["epilogue"]) != 0;
  if (epi) d.flags |= MmDesc::kEpilogue;
  auto bytes = d.to_bytes();
  std::string why;
  if (as.is_final() && !MmDesc::parse(bytes, &why)) as.error(why);
  return bytes;
}

}  // namespace tilecore::arch
