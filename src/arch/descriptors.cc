// src/arch/descriptors.cc — byte layouts and validation of tile descriptors.
#include "tilecore/arch/descriptors.h"

#include <cstring>

#include "tilecore/arch/params.h"

namespace tilecore::arch {

namespace {

template <typename T>
void put(uint8_t* b, size_t off, T v) {
  std::memcpy(b + off, &v, sizeof(T));
}
template <typename T>
T get(std::span<const uint8_t> b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

template <typename T, size_t N>
void put_arr(uint8_t* b, size_t off, const std::array<T, N>& a) {
  for (size_t i = 0; i < N; ++i) put(b, off + i * sizeof(T), a[i]);
}
template <typename T, size_t N>
void get_arr(std::span<const uint8_t> b, size_t off, std::array<T, N>& a) {
  for (size_t i = 0; i < N; ++i) a[i] = get<T>(b, off + i * sizeof(T));
}

bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}

}  // namespace

std::array<uint8_t, DmaDesc::kBytes> DmaDesc::to_bytes() const {
  std::array<uint8_t, kBytes> b{};
  b[0] = uint8_t(src_dtype);
  b[1] = uint8_t(dst_dtype);
  b[2] = rank;
  b[3] = flags;
  put(b.data(), 4, fill_bits);
  put_arr(b.data(), 8, shape);
  put_arr(b.data(), 24, src_stride);
  put_arr(b.data(), 40, dst_stride);
  put_arr(b.data(), 56, pad_lo);
  put_arr(b.data(), 64, pad_hi);
  return b;
}

std::optional<DmaDesc> DmaDesc::parse(std::span<const uint8_t> b, std::string* why) {
  if (b.size() < kBytes) {
    fail(why, "DMA descriptor truncated");
    return std::nullopt;
  }
  DmaDesc d;
  if (!is_valid_dtype(b[0]) || !is_valid_dtype(b[1])) {
    fail(why, "DMA descriptor: invalid dtype code");
    return std::nullopt;
  }
  d.src_dtype = DType(b[0]);
  d.dst_dtype = DType(b[1]);
  d.rank = b[2];
  d.flags = b[3];
  if (d.rank < 1 || d.rank > 4) {
    fail(why, "DMA descriptor: rank " + std::to_string(d.rank) + " not in 1..4");
    return std::nullopt;
  }
  if (d.flags & ~kFill) {
    fail(why, "DMA descriptor: unknown flag bits");
    return std::nullopt;
  }
  d.fill_bits = get<uint32_t>(b, 4);
  get_arr(b, 8, d.shape);
  get_arr(b, 24, d.src_stride);
  get_arr(b, 40, d.dst_stride);
  get_arr(b, 56, d.pad_lo);
  get_arr(b, 64, d.pad_hi);
  for (int i = d.rank; i < 4; ++i) {
    d.shape[size_t(i)] = 1;
    d.pad_lo[size_t(i)] = d.pad_hi[size_t(i)] = 0;
  }
  for (int i = 0; i < d.rank; ++i)
    if (uint64_t(d.pad_lo[size_t(i)]) + d.pad_hi[size_t(i)] > d.shape[size_t(i)]) {
      fail(why, "DMA descriptor: padding of dim " + std::to_string(i) + " exceeds its extent");
      return std::nullopt;
    }
  return d;
}

std::array<uint8_t, VecDesc::kBytes> VecDesc::to_bytes() const {
  std::array<uint8_t, kBytes> b{};
  b[0] = rank;
  put_arr(b.data(), 4, shape);
  put_arr(b.data(), 20, d_stride);
  put_arr(b.data(), 36, a_stride);
  put_arr(b.data(), 52, b_stride);
  put(b.data(), 68, scalar);
  put(b.data(), 72, scale);
  put(b.data(), 76, zero_point);
  return b;
}

std::optional<VecDesc> VecDesc::parse(std::span<const uint8_t> b, std::string* why) {
  if (b.size() < kBytes) {
    fail(why, "vector descriptor truncated");
    return std::nullopt;
  }
  VecDesc d;
  d.rank = b[0];
  if (d.rank < 1 || d.rank > 4) {
    fail(why, "vector descriptor: rank " + std::to_string(d.rank) + " not in 1..4");
    return std::nullopt;
  }
  if (b[1] || b[2] || b[3]) {
    fail(why, "vector descriptor: reserved bytes 1..3 are not zero");
    return std::nullopt;
  }
  get_arr(b, 4, d.shape);
  get_arr(b, 20, d.d_stride);
  get_arr(b, 36, d.a_stride);
  get_arr(b, 52, d.b_stride);
  d.scalar = get<float>(b, 68);
  d.scale = get<float>(b, 72);
  d.zero_point = get<int32_t>(b, 76);
  for (int i = d.rank; i < 4; ++i) d.shape[size_t(i)] = 1;
  return d;
}

std::vector<uint8_t> MmDesc::to_bytes() const {
  std::vector<uint8_t> b(kExtendedBytes, 0);
  put(b.data(), 0, m);
  put(b.data(), 4, n);
  put(b.data(), 8, k);
  put(b.data(), 12, lda);
  put(b.data(), 16, ldb);
  put(b.data(), 20, ldc);
  b[24] = uint8_t(out_dtype);
  b[25] = uint8_t(act);
  b[26] = flags;
  b[27] = uint8_t(res_dtype);
  put(b.data(), 28, bias_addr);
  put(b.data(), 32, scale);
  put(b.data(), 36, clamp_lo);
  put(b.data(), 40, clamp_hi);
  put(b.data(), 44, zero_point);
  put(b.data(), 48, ldo);
  put(b.data(), 52, scale_addr);
  put(b.data(), 56, res_addr);
  put(b.data(), 60, ldr);
  b.resize(extended() ? kExtendedBytes : kBytes);
  return b;
}

std::optional<MmDesc> MmDesc::parse(std::span<const uint8_t> b, std::string* why) {
  if (b.size() < kBytes) {
    fail(why, "matrix descriptor truncated");
    return std::nullopt;
  }
  MmDesc d;
  d.m = get<uint32_t>(b, 0);
  d.n = get<uint32_t>(b, 4);
  d.k = get<uint32_t>(b, 8);
  d.lda = get<uint32_t>(b, 12);
  d.ldb = get<uint32_t>(b, 16);
  d.ldc = get<uint32_t>(b, 20);
  if (!is_valid_dtype(b[24])) {
    fail(why, "matrix descriptor: invalid output dtype code");
    return std::nullopt;
  }
  d.out_dtype = DType(b[24]);
  if (b[25] > 1) {
    fail(why, "matrix descriptor: unknown activation " + std::to_string(b[25]));
    return std::nullopt;
  }
  d.act = Activation(b[25]);
  d.flags = b[26];
  if (d.flags & ~15u) {
    fail(why, "matrix descriptor: unknown flag bits");
    return std::nullopt;
  }
  if (b.size() < size_for_flags(d.flags)) {
    fail(why, "matrix descriptor truncated (extended: 64 bytes)");
    return std::nullopt;
  }
  if ((d.flags & (kBias | kChannelScale | kResidual)) && !d.epilogue()) {
    fail(why, "matrix descriptor: bias, per-channel scale and residual need the epilogue flag");
    return std::nullopt;
  }
  if (d.residual()) {
    if (!is_valid_dtype(b[27]) || DType(b[27]) == DType::Bool) {
      fail(why, "matrix descriptor: invalid residual dtype code " + std::to_string(b[27]));
      return std::nullopt;
    }
    d.res_dtype = DType(b[27]);
  } else if (b[27]) {
    fail(why, "matrix descriptor: residual dtype set without the residual flag");
    return std::nullopt;
  }
  d.bias_addr = get<uint32_t>(b, 28);
  d.scale = get<float>(b, 32);
  d.clamp_lo = get<float>(b, 36);
  d.clamp_hi = get<float>(b, 40);
  d.zero_point = get<int32_t>(b, 44);
  d.ldo = get<uint32_t>(b, 48);
  if (d.channel_scale()) d.scale_addr = get<uint32_t>(b, 52);
  if (d.residual()) {
    d.res_addr = get<uint32_t>(b, 56);
    d.ldr = get<uint32_t>(b, 60);
  }
  auto dim_ok = [](uint32_t v) { return v >= 1 && v <= tc1::kMaxMmDim; };
  if (!dim_ok(d.m) || !dim_ok(d.n) || !dim_ok(d.k)) {
    fail(why, "matrix descriptor: M, N, K must be in 1.." + std::to_string(tc1::kMaxMmDim) +
                  " (got " + std::to_string(d.m) + ", " + std::to_string(d.n) + ", " +
                  std::to_string(d.k) + ")");
    return std::nullopt;
  }
  if (d.lda < d.k || d.ldb < d.n || d.ldc < d.n || (d.epilogue() && d.ldo < d.n) ||
      (d.residual() && d.ldr < d.n)) {
    fail(why,
         "matrix descriptor: a leading dimension is smaller than its row (lda >= K, ldb >= N, ldc "
         ">= N, ldo >= N, ldr >= N)");
    return std::nullopt;
  }
  return d;
}

}  // namespace tilecore::arch
