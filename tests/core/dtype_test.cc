#include "core/dtype.h"

#include <cmath>

#include <gtest/gtest.h>

namespace taco {
namespace {

TEST(DType, Bf16RoundTripsRepresentableValuesAndRoundsToNearestEven) {
    for (float v : {0.0f, 1.0f, -2.5f, 3.140625f, 0x1p-100f, -65536.0f}) {
        EXPECT_EQ(bf16_to_f32(f32_to_bf16(v)), v) << v;
    }
    // 1 + 2^-8 is halfway between two bf16 values: rounds to the even one (1.0).
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(DType, F16ConvertsNormalsSubnormalsAndInfinity) {
    EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
    EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
    EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
    for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
        ASSERT_EQ(f32_to_f16(f16_to_f32(uint16_t(bits))), bits) << bits;
    }
    EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
}

TEST(DType, Fp8DecodesAsPytorchDoes) {
    EXPECT_EQ(f8e4m3_to_f32(0x38), 1.0f);    // 0 0111 000
    EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);  // largest finite E4M3FN
    EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7f)));
    EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(f8e5m2_to_f32(0x3c), 1.0f);
    EXPECT_EQ(f8e5m2_to_f32(0x7b), 57344.0f);
}

TEST(DType, NamesRoundTripThroughTheSafetensorsSpelling) {
    for (auto name : {"F32", "F16", "BF16", "I8", "U8", "I32", "I64", "F8_E4M3", "F8_E5M2"}) {
        auto d = dtype_from_safetensors_name(name);
        ASSERT_TRUE(d.has_value()) << name;
        EXPECT_EQ(dtype_name(*d), name);
    }
    EXPECT_FALSE(dtype_from_safetensors_name("F64").has_value());
}

}  // namespace
}  // namespace taco
