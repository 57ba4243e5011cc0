// Element types of tensors, as safetensors names them, and scalar conversions to and from fp32.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace taco {

enum class DType : uint8_t { kF32, kF16, kBF16, kI8, kU8, kI32, kI64, kF8E4M3, kF8E5M2 };

size_t dtype_size_bytes(DType dtype);
// "F32", "BF16", ... (the safetensors spelling).
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
bool dtype_is_float(DType dtype);

inline float bf16_to_f32(uint16_t bits) {
    uint32_t wide = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof(value));
    return value;
}

// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}

float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float f8e4m3_to_f32(uint8_t bits);
float f8e5m2_to_f32(uint8_t bits);

// Reads element i of a buffer of the given dtype, widened to float (integers converted by value).
float load_as_f32(const void* data, DType dtype, size_t i);
// Writes element i of a float buffer (f32, f16, bf16) from fp32, rounding to nearest even; other dtypes abort.
void store_from_f32(void* data, DType dtype, size_t i, float value);
// n elements of src (any float dtype) into dst (f32, f16, bf16): a memcpy for the same dtype, else through fp32.
void convert_floats(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n);

}  // namespace taco
