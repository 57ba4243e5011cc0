#include "core/dtype.h"

#include <cmath>

#include "core/check.h"

namespace taco {

size_t dtype_size_bytes(DType dtype) {
    switch (dtype) {
        case DType::kF32: return 4;
        case DType::kF16: return 2;
        case DType::kBF16: return 2;
        case DType::kI8: return 1;
        case DType::kU8: return 1;
        case DType::kI32: return 4;
        case DType::kI64: return 8;
        case DType::kF8E4M3: return 1;
        case DType::kF8E5M2: return 1;
    }
    TACO_CHECK_MSG(false, "unknown dtype {}", int(dtype));
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::kF32: return "F32";
        case DType::kF16: return "F16";
        case DType::kBF16: return "BF16";
        case DType::kI8: return "I8";
        case DType::kU8: return "U8";
        case DType::kI32: return "I32";
        case DType::kI64: return "I64";
        case DType::kF8E4M3: return "F8_E4M3";
        case DType::kF8E5M2: return "F8_E5M2";
    }
    TACO_CHECK_MSG(false, "unknown dtype {}", int(dtype));
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64,
                    DType::kF8E4M3, DType::kF8E5M2}) {
        if (dtype_name(d) == name) return d;
    }
    return std::nullopt;
}

bool dtype_is_float(DType dtype) {
    switch (dtype) {
        case DType::kF32:
        case DType::kF16:
        case DType::kBF16:
        case DType::kF8E4M3:
        case DType::kF8E5M2: return true;
        case DType::kI8:
        case DType::kU8:
        case DType::kI32:
        case DType::kI64: return false;
    }
    return false;
}

float f16_to_f32(uint16_t bits) {
    uint32_t sign = uint32_t(bits & 0x8000u) << 16;
    uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;
    uint32_t out;
    if (exponent == 0) {
        if (mantissa == 0) {
            out = sign;
        } else {  // subnormal: normalise
            int shift = 0;
            while ((mantissa & 0x400u) == 0) {
                mantissa <<= 1;
                ++shift;
            }
            mantissa &= 0x3ffu;
            out = sign | (uint32_t(127 - 15 - shift + 1) << 23) | (mantissa << 13);
        }
    } else if (exponent == 0x1f) {
        out = sign | 0x7f800000u | (mantissa << 13);
    } else {
        out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
    }
    float value;
    std::memcpy(&value, &out, sizeof(value));
    return value;
}

uint16_t f32_to_f16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t abs_bits = bits & 0x7fffffffu;
    if (abs_bits > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
    if (abs_bits >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf (after rounding)
    if (abs_bits < 0x38800000u) {                                  // subnormal or zero in f16
        float abs_value;
        std::memcpy(&abs_value, &abs_bits, sizeof(abs_value));
        // Scale so that the f16 subnormal unit (2^-24) becomes 1, then round to nearest even.
        float scaled = abs_value * 16777216.0f;
        uint32_t rounded = uint32_t(std::nearbyint(scaled));
        return uint16_t(sign | rounded);
    }
    uint32_t mantissa = abs_bits & 0x7fffffu;
    uint32_t exponent = (abs_bits >> 23) - 127 + 15;
    uint32_t half = (exponent << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return uint16_t(sign | half);
}

float f8e4m3_to_f32(uint8_t bits) {
    // E4M3FN: bias 7, no infinities, S.1111.111 is NaN.
    uint32_t sign = bits >> 7;
    uint32_t exponent = (bits >> 3) & 0xfu;
    uint32_t mantissa = bits & 0x7u;
    float value;
    if (exponent == 0xf && mantissa == 0x7) {
        value = std::nanf("");
    } else if (exponent == 0) {
        value = std::ldexp(float(mantissa), -9);
    } else {
        value = std::ldexp(1.0f + float(mantissa) / 8.0f, int(exponent) - 7);
    }
    return sign ? -value : value;
}

float f8e5m2_to_f32(uint8_t bits) {
    // E5M2 is the top byte of an IEEE half.
    return f16_to_f32(uint16_t(uint16_t(bits) << 8));
}

float load_as_f32(const void* data, DType dtype, size_t i) {
    switch (dtype) {
        case DType::kF32: return static_cast<const float*>(data)[i];
        case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
        case DType::kI8: return float(static_cast<const int8_t*>(data)[i]);
        case DType::kU8: return float(static_cast<const uint8_t*>(data)[i]);
        case DType::kI32: return float(static_cast<const int32_t*>(data)[i]);
        case DType::kI64: return float(static_cast<const int64_t*>(data)[i]);
        case DType::kF8E4M3: return f8e4m3_to_f32(static_cast<const uint8_t*>(data)[i]);
        case DType::kF8E5M2: return f8e5m2_to_f32(static_cast<const uint8_t*>(data)[i]);
    }
    return 0.0f;
}

void store_from_f32(void* data, DType dtype, size_t i, float value) {
    switch (dtype) {
        case DType::kF32: static_cast<float*>(data)[i] = value; return;
        case DType::kF16: static_cast<uint16_t*>(data)[i] = f32_to_f16(value); return;
        case DType::kBF16: static_cast<uint16_t*>(data)[i] = f32_to_bf16(value); return;
        default: break;
    }
    TACO_CHECK_MSG(false, "store_from_f32: {} is not a float dtype to store into", dtype_name(dtype));
}

void convert_floats(const void* src, DType src_dtype, void* dst, DType dst_dtype, size_t n) {
    if (src_dtype == dst_dtype) {
        std::memcpy(dst, src, n * dtype_size_bytes(src_dtype));
        return;
    }
    for (size_t i = 0; i < n; ++i) store_from_f32(dst, dst_dtype, i, load_as_f32(src, src_dtype, i));
}

}  // namespace taco
