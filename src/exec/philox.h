// Counter-based random numbers for sampling: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
// as 1, 2, 3", SC'11; the generator of Random123, cuRAND and PyTorch's CUDA RNG) and the Gumbel noise that
// BatchSampler adds to logits. The noise of a token depends only on (seed, draw index, token), never on the
// batch, the thread or the backend, so a seeded request draws the same tokens alone or batched, on the CPU or
// on a GPU.
//
// Bit-identical on host and device: only integer ops and correctly rounded float +, -, *, /. The logarithm is
// our own (exponent-bit range reduction and a fixed polynomial), since libm's and CUDA's logf differ in the
// last bit. Every float product goes through mul_rn(), which a compiler cannot fuse into an fma with the add
// that follows (an fma rounds once, a product and a sum twice: nvcc fuses by default, and GCC does on any
// target with FMA instructions).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TACO_HOST_DEVICE __host__ __device__
#else
#define TACO_HOST_DEVICE
#endif

namespace taco::philox {

struct Block {
    uint32_t w[4];
};

constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;    // round multipliers
constexpr uint32_t kBump0 = 0x9E3779B9, kBump1 = 0xBB67AE85;  // key schedule: golden ratio, sqrt(3) - 1
constexpr int kRounds = 10;

// Philox4x32-10 of `counter` under `key`, word for word as Random123's philox4x32_R(10, ...).
TACO_HOST_DEVICE inline Block philox4x32_10(Block counter, uint32_t key0, uint32_t key1) {
    for (int round = 0; round < kRounds; ++round) {
        if (round > 0) {
            key0 += kBump0;
            key1 += kBump1;
        }
        const uint64_t p0 = uint64_t(kMul0) * counter.w[0];
        const uint64_t p1 = uint64_t(kMul1) * counter.w[2];
        counter = {{uint32_t(p1 >> 32) ^ counter.w[1] ^ key0, uint32_t(p1), uint32_t(p0 >> 32) ^ counter.w[3] ^ key1,
                    uint32_t(p0)}};
    }
    return counter;
}

// The random bits of tokens 4 g .. 4 g + 3 on one draw: key = the seed (low word first), counter = (draw index
// low word, high word, g, 0). One block serves four consecutive tokens, a quarter of the work of one each.
TACO_HOST_DEVICE inline Block token_group_bits(uint64_t seed, int64_t draw_index, uint32_t group) {
    const uint64_t draw = uint64_t(draw_index);
    const Block counter = {{uint32_t(draw), uint32_t(draw >> 32), group, 0}};
    return philox4x32_10(counter, uint32_t(seed), uint32_t(seed >> 32));
}

// The 32 random bits of one token (token >= 0): word token % 4 of its group's block.
TACO_HOST_DEVICE inline uint32_t token_bits(uint64_t seed, int64_t draw_index, int32_t token) {
    return token_group_bits(seed, draw_index, uint32_t(token) >> 2).w[uint32_t(token) & 3];
}

TACO_HOST_DEVICE inline uint32_t float_to_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
#endif
}

TACO_HOST_DEVICE inline float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
#endif
}

// Correctly rounded float arithmetic that no compiler contracts into an fma.
TACO_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    float p = a * b;
    // Opaque, so the add that uses p cannot see the product. Always, not only where __FP_FAST_FMAF says the
    // translation unit targets FMA: a function with __attribute__((target("fma"))) may inline this one.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    asm("" : "+x"(p));
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
    asm("" : "+w"(p));
#elif defined(__FP_FAST_FMAF)
    volatile float rounded = p;
    p = rounded;
#endif
    return p;
#endif
}

TACO_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

TACO_HOST_DEVICE inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

TACO_HOST_DEVICE inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// Natural logarithm of a positive normal float, within 2 ulp of the exact value (tests sweep it against
// std::log). x = 2^k * m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f):
// log(m) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R), R = 2/3 z + 2/5 z^2 + 2/7 z^3 + 2/9 z^4 with z = s^2
// (|s| < 0.172: the first term left out, 2/11 z^5, is below 2^-30 relative). As fdlibm's logf, with Taylor
// coefficients; ln 2 is split so that k * ln2_hi is exact.
TACO_HOST_DEVICE inline float log_positive(float x) {
    constexpr uint32_t kSqrt2Mantissa = 0x3504F3;  // mantissa bits of sqrt(2)
    constexpr float kLn2Hi = 0x1.62e3p-1f;         // 17 significant bits: k * kLn2Hi is exact
    constexpr float kLn2Lo = 0x1.2fefa4p-17f;      // ln 2 - kLn2Hi, rounded
    const uint32_t bits = float_to_bits(x);
    int32_t k = int32_t(bits >> 23) - 127;
    uint32_t mantissa = bits & 0x7FFFFF;
    uint32_t exponent = 0x3F800000;  // m in [1, sqrt(2))
    if (mantissa > kSqrt2Mantissa) {
        exponent = 0x3F000000;  // m in [sqrt(1/2), 1)
        k += 1;
    }
    const float f = sub_rn(bits_to_float(mantissa | exponent), 1.0f);
    const float s = div_rn(f, add_rn(2.0f, f));
    const float z = mul_rn(s, s);
    float r = 2.0f / 9.0f;
    r = add_rn(2.0f / 7.0f, mul_rn(z, r));
    r = add_rn(2.0f / 5.0f, mul_rn(z, r));
    r = add_rn(2.0f / 3.0f, mul_rn(z, r));
    r = mul_rn(z, r);
    const float half_f2 = mul_rn(mul_rn(0.5f, f), f);
    const float kf = float(k);  // |k| < 150: exact
    // log(x) = k ln2_hi + (f - (half_f2 - (s (half_f2 + r) + k ln2_lo)))
    const float tail = add_rn(mul_rn(s, add_rn(half_f2, r)), mul_rn(kf, kLn2Lo));
    return add_rn(mul_rn(kf, kLn2Hi), sub_rn(f, sub_rn(half_f2, tail)));
}

// u in (0, 1), never 0 or 1: the top 23 bits as (2 m + 1) / 2^24, exact in a float.
TACO_HOST_DEVICE inline float uniform_open(uint32_t bits) {
    return float(((bits >> 9) << 1) | 1u) * (1.0f / 16777216.0f);  // a power of two: exact
}

// Gumbel(0, 1) noise from 32 random bits: -log(-log(u)), in [kMinGumbel, kMaxGumbel].
TACO_HOST_DEVICE inline float gumbel_from_bits(uint32_t bits) {
    return -log_positive(-log_positive(uniform_open(bits)));
}

// Bounds of gumbel_from_bits, a little outside: u = 1 - 2^-24 gives 24 ln 2 = 16.6355, u = 2^-24 gives
// -log(24 ln 2) = -2.8116.
constexpr float kMaxGumbel = 16.64f;
constexpr float kMinGumbel = -2.82f;

// An upper bound of gumbel_from_bits(bits) from integer ops alone, to rule a token out before any
// logarithm. With v = 1 - u = (2 n + 1) / 2^24: -log(u) >= v, so the noise is at most -log(v), and
// -log(v) <= ln 2 * (24 - floor(log2(2 n + 1))). Loose by at most ln 2 + v for u >= 1/2, where it matters
// (large noise); the margin covers the rounding of log_positive.
TACO_HOST_DEVICE inline float gumbel_upper_bound(uint32_t bits) {
    const uint32_t n = 0x7FFFFFu - (bits >> 9);
    const uint32_t odd = (n << 1) | 1u;
#if defined(__CUDA_ARCH__)
    const int log2_floor = 31 - __clz(odd);
#else
    const int log2_floor = 31 - __builtin_clz(odd);
#endif
    return add_rn(mul_rn(float(24 - log2_floor), 0.69314718f), 1e-4f);
}

}  // namespace taco::philox

namespace taco {

// The Gumbel noise BatchSampler adds to token `token`'s scaled logit on draw `draw_index` (the number of
// tokens the sequence sampled before) of a request seeded `seed`.
TACO_HOST_DEVICE inline float gumbel_noise(uint64_t seed, int64_t draw_index, int32_t token) {
    return philox::gumbel_from_bits(philox::token_bits(seed, draw_index, token));
}

// The Gumbel-max key of a token: (logit - max_logit) / temperature + noise. The token with the largest key
// among the allowed ones (lowest id on ties) is a draw from their softmax at that temperature.
TACO_HOST_DEVICE inline float gumbel_key(float logit, float max_logit, float temperature, float noise) {
    return philox::add_rn(philox::div_rn(philox::sub_rn(logit, max_logit), temperature), noise);
}

}  // namespace taco
