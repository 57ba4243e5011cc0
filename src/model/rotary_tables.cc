#include "model/rotary_tables.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "model/weight_placer.h"

namespace taco {
namespace {

constexpr double kPi = 3.14159265358979323846;

// torch: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all in fp32.
std::vector<float> default_inv_freq(double base, int dim) {
    std::vector<float> out(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim / 2; ++i) {
        float exponent = float(2 * i) / float(dim);
        float p = float(std::pow(base, double(exponent)));
        out[size_t(i)] = 1.0f / p;
    }
    return out;
}

double yarn_get_mscale(double scale, double mscale) {
    if (scale <= 1) return 1.0;
    return 0.1 * mscale * std::log(scale) + 1.0;
}

void apply_llama3(const RopeConfig& rope, std::vector<float>& inv_freq) {
    const float factor = float(rope.factor);
    const double old_context_len = double(rope.original_max_position_embeddings);
    const float low_freq_wavelen = float(old_context_len / rope.low_freq_factor);
    const float high_freq_wavelen = float(old_context_len / rope.high_freq_factor);
    for (float& f : inv_freq) {
        float wavelen = float(2 * kPi) / f;
        float scaled = wavelen > low_freq_wavelen ? f / factor : f;
        bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
        if (medium) {
            float smooth = (float(old_context_len) / wavelen - float(rope.low_freq_factor)) /
                           float(rope.high_freq_factor - rope.low_freq_factor);
            scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
        }
        f = scaled;
    }
}

void apply_yarn(const ModelConfig& config, int dim, std::vector<float>& inv_freq, float& attention_scaling) {
    const RopeConfig& rope = config.rope;
    const double base = rope.theta;
    const double original = rope.original_max_position_embeddings > 0 ? double(rope.original_max_position_embeddings)
                                                                      : double(config.max_position_embeddings);
    const double factor = rope.factor;
    double attention = 0;
    if (rope.attention_factor) {
        attention = *rope.attention_factor;
    } else if (rope.mscale && rope.mscale_all_dim && *rope.mscale != 0 && *rope.mscale_all_dim != 0) {
        attention = yarn_get_mscale(factor, *rope.mscale) / yarn_get_mscale(factor, *rope.mscale_all_dim);
    } else {
        attention = yarn_get_mscale(factor, 1.0);
    }
    attention_scaling = float(attention);
    auto correction_dim = [&](double num_rotations) {
        return (dim * std::log(original / (num_rotations * 2 * kPi))) / (2 * std::log(base));
    };
    double low = correction_dim(rope.beta_fast);
    double high = correction_dim(rope.beta_slow);
    if (rope.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, double(dim - 1));
    if (low == high) high += 0.001;
    for (int i = 0; i < dim / 2; ++i) {
        float pos_freq = float(std::pow(base, double(float(2 * i) / float(dim))));
        float extrapolation = 1.0f / pos_freq;
        float interpolation = 1.0f / (float(factor) * pos_freq);
        float ramp = (float(i) - float(low)) / (float(high) - float(low));
        ramp = std::clamp(ramp, 0.0f, 1.0f);
        float extrapolation_factor = 1.0f - ramp;
        inv_freq[size_t(i)] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
}

// transformers: 1.0 / (ext_factors * base ** (arange(0, dim, 2) / dim)) in fp32, ext_factors short or long; the
// attention factor defaults to sqrt(1 + ln(factor) / ln(original)) when the scale exceeds 1.
void apply_longrope(const RopeConfig& rope, int dim, RotaryFrequencies& out) {
    auto scaled = [&](const std::vector<double>& ext) {
        std::vector<float> inv(size_t(dim / 2));
        for (int i = 0; i < dim / 2; ++i) {
            float p = float(std::pow(rope.theta, double(float(2 * i) / float(dim))));
            inv[size_t(i)] = 1.0f / (float(ext[size_t(i)]) * p);
        }
        return inv;
    };
    out.inv_freq = scaled(rope.short_factor);
    out.inv_freq_long = scaled(rope.long_factor);
    out.long_rope_threshold = rope.original_max_position_embeddings;
    double attention = 1.0;
    if (rope.attention_factor) {
        attention = *rope.attention_factor;
    } else if (rope.factor > 1.0) {
        attention = std::sqrt(1 + std::log(rope.factor) / std::log(double(rope.original_max_position_embeddings)));
    }
    out.attention_scaling = float(rope.short_mscale.value_or(attention));
    out.attention_scaling_long = float(rope.long_mscale.value_or(attention));
}

}  // namespace

RotaryFrequencies compute_rotary_frequencies(const ModelConfig& config) {
    const RopeConfig& rope = config.rope;
    const int dim = int(config.rotary_dim());
    RotaryFrequencies out;
    out.inv_freq = default_inv_freq(rope.theta, dim);
    switch (rope.type) {
        case RopeType::kDefault: break;
        case RopeType::kLinear:
            for (float& f : out.inv_freq) f /= float(rope.factor);
            break;
        case RopeType::kDynamic: {
            const double max_pos = double(config.max_position_embeddings);
            const double max_len = max_pos * rope.factor;
            const double base =
                rope.theta * std::pow((rope.factor * max_len / max_pos) - (rope.factor - 1), double(dim) / (dim - 2));
            out.inv_freq_long = default_inv_freq(base, dim);
            out.long_from = config.max_position_embeddings;
            break;
        }
        case RopeType::kLlama3: apply_llama3(rope, out.inv_freq); break;
        case RopeType::kYarn: apply_yarn(config, dim, out.inv_freq, out.attention_scaling); break;
        case RopeType::kLongRope: apply_longrope(rope, dim, out); break;
    }
    return out;
}

RotaryTables::RotaryTables(const ModelConfig& config, int64_t num_positions)
    : RotaryTables(compute_rotary_frequencies(config), int(config.rotary_dim()), num_positions) {}

RotaryTables::RotaryTables(RotaryFrequencies frequencies, int rotary_dim, int64_t num_positions)
    : frequencies_(std::move(frequencies)), rotary_dim_(rotary_dim), num_positions_(num_positions) {
    TACO_CHECK_GT(num_positions, 0);
    const bool long_rope = frequencies_.long_rope_threshold > 0;
    const int64_t rows = long_rope ? 2 * num_positions : num_positions;
    cos_ = Tensor::empty({rows, rotary_dim / 2}, DType::kF32);
    sin_ = Tensor::empty({rows, rotary_dim / 2}, DType::kF32);
    fill(0, frequencies_.inv_freq, frequencies_.inv_freq_long, frequencies_.long_from, frequencies_.attention_scaling);
    if (long_rope) fill(num_positions, frequencies_.inv_freq_long, {}, INT64_MAX, frequencies_.attention_scaling_long);
}

void RotaryTables::fill(int64_t first_row, const std::vector<float>& inv_freq, const std::vector<float>& inv_freq_long,
                        int64_t long_from, float scaling) {
    const int half = rotary_dim_ / 2;
    float* cos = cos_.as<float>() + first_row * half;
    float* sin = sin_.as<float>() + first_row * half;
    for (int64_t p = 0; p < num_positions_; ++p) {
        const std::vector<float>& inv = p >= long_from ? inv_freq_long : inv_freq;
        for (int i = 0; i < half; ++i) {
            // torch forms the angle as one fp32 product, then takes cos/sin in fp32 and scales.
            float angle = float(p) * inv[size_t(i)];
            cos[p * half + i] = float(std::cos(double(angle))) * scaling;
            sin[p * half + i] = float(std::sin(double(angle))) * scaling;
        }
    }
}

RotaryLayout RotaryTables::layout() const {
    RotaryLayout out;
    if (frequencies_.long_rope_threshold > 0) {
        out.long_rope_threshold = frequencies_.long_rope_threshold;
        out.long_table_offset = int32_t(num_positions_);
    }
    return out;
}

void RotaryTables::place(WeightPlacer& placer) {
    cos_ = placer.vector(std::move(cos_));
    sin_ = placer.vector(std::move(sin_));
}

}  // namespace taco
