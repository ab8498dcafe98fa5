// Physical quantities as SI doubles with a compile-time dimension tag (STYLE.md §4).
//
// Bytes, Seconds, Flops, ByteRate (B/s), FlopRate (FLOP/s) and Frequency (Hz) are distinct types; only physically meaningful mixed
// operations exist (Bytes / ByteRate -> Seconds, Flops / FlopRate -> Seconds, Bytes / Seconds -> ByteRate, ...).
// `.value()` is for the SimGrid and JSON edges only. Element counts (DeepSpeed buckets count elements) are the
// separate integer type `Elements`.
#pragma once

#include <compare>
#include <cstdint>

namespace zerosim {

/// A double in SI units tagged with its dimension. Construction from a raw double is explicit.
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  /// The SI value (bytes, seconds, FLOP, B/s or FLOP/s).
  [[nodiscard]] constexpr double value() const { return v_; }

  constexpr Quantity& operator+=(Quantity o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr Quantity& operator*=(double k) {
    v_ *= k;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v_ - b.v_); }
  friend constexpr Quantity operator-(Quantity a) { return Quantity(-a.v_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.v_ / k); }
  /// Ratio of two quantities of the same dimension (dimensionless).
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  double v_ = 0.0;
};

struct BytesTag {};
struct SecondsTag {};
struct FlopsTag {};
struct ByteRateTag {};
struct FlopRateTag {};
struct FrequencyTag {};

using Bytes = Quantity<BytesTag>; ///< bytes (B)
using Seconds = Quantity<SecondsTag>; ///< seconds (s)
using Flops = Quantity<FlopsTag>; ///< floating-point operations (FLOP)
using ByteRate = Quantity<ByteRateTag>; ///< bytes per second (B/s)
using FlopRate = Quantity<FlopRateTag>; ///< FLOP per second (FLOP/s)
using Frequency = Quantity<FrequencyTag>; ///< cycles per second (Hz), e.g. a CPU core clock

constexpr Seconds operator/(Bytes b, ByteRate r) { return Seconds(b.value() / r.value()); }
constexpr Seconds operator/(Flops f, FlopRate r) { return Seconds(f.value() / r.value()); }
constexpr ByteRate operator/(Bytes b, Seconds t) { return ByteRate(b.value() / t.value()); }
constexpr FlopRate operator/(Flops f, Seconds t) { return FlopRate(f.value() / t.value()); }
constexpr Bytes operator*(ByteRate r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Bytes operator*(Seconds t, ByteRate r) { return Bytes(r.value() * t.value()); }
constexpr Flops operator*(FlopRate r, Seconds t) { return Flops(r.value() * t.value()); }

/// A count of tensor elements (DeepSpeed's bucket and threshold settings are in elements, not bytes).
using Elements = std::int64_t;

/// Bytes of `n` elements of `bytes_per_element` bytes each.
constexpr Bytes bytes_of(Elements n, double bytes_per_element) {
  return Bytes(static_cast<double>(n) * bytes_per_element);
}

inline constexpr double kGB = 1e9; ///< decimal gigabyte
inline constexpr double kGiB = 1073741824.0; ///< binary gibibyte, 2^30
inline constexpr double kMiB = 1048576.0; ///< 2^20

namespace literals {
constexpr Bytes operator""_B(unsigned long long v) { return Bytes(static_cast<double>(v)); }
constexpr Bytes operator""_GB(long double v) { return Bytes(static_cast<double>(v) * kGB); }
constexpr Bytes operator""_GB(unsigned long long v) { return Bytes(static_cast<double>(v) * kGB); }
constexpr Bytes operator""_GiB(long double v) { return Bytes(static_cast<double>(v) * kGiB); }
constexpr Bytes operator""_GiB(unsigned long long v) { return Bytes(static_cast<double>(v) * kGiB); }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes(static_cast<double>(v) * kMiB); }
constexpr Seconds operator""_s(long double v) { return Seconds(static_cast<double>(v)); }
constexpr Seconds operator""_us(unsigned long long v) { return Seconds(static_cast<double>(v) * 1e-6); }
constexpr ByteRate operator""_GBps(unsigned long long v) { return ByteRate(static_cast<double>(v) * kGB); }
constexpr ByteRate operator""_GBps(long double v) { return ByteRate(static_cast<double>(v) * kGB); }
} // namespace literals

} // namespace zerosim
