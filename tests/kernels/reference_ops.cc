// Dense ops of the scalar reference (reference_ops.h): matmul, lookups, norms and elementwise ops in double.
#include "reference_ops.h"

#include <cmath>
#include <numbers>

#include "core/check.h"
#include "core/dtype.h"

namespace taco::ref {
namespace {

// Offset in elements of row-major element i of t.
int64_t element_offset(const TensorView& t, int64_t i) {
    int64_t offset = 0;
    for (int d = t.ndim - 1; d >= 0; --d) {
        offset += (i % t.shape[d]) * t.strides[d];
        i /= t.shape[d];
    }
    return offset;
}

int64_t rows_of(const TensorView& t) { return t.ndim == 0 ? 0 : t.numel() / t.shape[t.ndim - 1]; }
int64_t cols_of(const TensorView& t) { return t.shape[t.ndim - 1]; }

}  // namespace

double value_at(const TensorView& t, int64_t i) {
    TACO_CHECK(t.device == Device::kCpu && dtype_is_float(t.dtype));
    return double(load_as_f32(t.data, t.dtype, size_t(element_offset(t, i))));
}

Values values_of(const TensorView& t) {
    Values out(size_t(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) out[size_t(i)] = value_at(t, i);
    return out;
}

int64_t index_at(const TensorView& t, int64_t i) {
    TACO_CHECK(t.device == Device::kCpu);
    const int64_t offset = element_offset(t, i);
    switch (t.dtype) {
        case DType::kI32: return static_cast<const int32_t*>(t.data)[offset];
        case DType::kI64: return static_cast<const int64_t*>(t.data)[offset];
        default: TACO_CHECK_MSG(false, "index view of dtype {}", dtype_name(t.dtype));
    }
    return 0;
}

double round_to_bf16(double x) { return double(bf16_to_f32(f32_to_bf16(float(x)))); }

Values matmul(const TensorView& x, const TensorView& w, const TensorView* bias) {
    const int64_t m = x.shape[0], n = w.shape[0], k = x.shape[1];
    TACO_CHECK_EQ(w.shape[1], k);
    Values y(size_t(m * n));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int64_t t = 0; t < k; ++t) sum += value_at(x, i * k + t) * value_at(w, j * k + t);
            y[size_t(i * n + j)] = sum + (bias != nullptr ? value_at(*bias, j) : 0.0);
        }
    }
    return y;
}

double dot(const float* a, const float* b, int64_t k) {
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += double(a[i]) * double(b[i]);
    return sum;
}

Values embedding(const TensorView& ids, const TensorView& table) {
    const int64_t hidden = table.shape[1];
    Values out;
    for (int64_t t = 0; t < ids.numel(); ++t) {
        const int64_t id = index_at(ids, t);
        TACO_CHECK(id >= 0 && id < table.shape[0]);
        for (int64_t i = 0; i < hidden; ++i) out.push_back(value_at(table, id * hidden + i));
    }
    return out;
}

Values gather_rows(const TensorView& src, const TensorView& indices) {
    return embedding(indices, src);  // the same contract: row indices[r] of src
}

Values copy(const TensorView& src) { return values_of(src); }

Values rms_norm(const TensorView& x, const TensorView& weight, double eps, double weight_offset) {
    const int64_t hidden = cols_of(x);
    Values out(size_t(x.numel()));
    for (int64_t r = 0; r < rows_of(x); ++r) {
        double sum_squares = 0;
        for (int64_t i = 0; i < hidden; ++i) sum_squares += value_at(x, r * hidden + i) * value_at(x, r * hidden + i);
        const double inv_rms = 1.0 / std::sqrt(sum_squares / double(hidden) + eps);
        for (int64_t i = 0; i < hidden; ++i)
            out[size_t(r * hidden + i)] = value_at(x, r * hidden + i) * inv_rms * (value_at(weight, i) + weight_offset);
    }
    return out;
}

namespace {

// LayerNorm of each row of the last dim; row r uses weight (and bias) row `param_row(r)`.
template <class ParamRow>
Values layer_norm_rows(const TensorView& x, const TensorView& weight, const TensorView* bias, double eps,
                       ParamRow param_row) {
    const int64_t dim = cols_of(x);
    Values out(size_t(x.numel()));
    for (int64_t r = 0; r < rows_of(x); ++r) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < dim; ++i) mean += value_at(x, r * dim + i);
        mean /= double(dim);
        for (int64_t i = 0; i < dim; ++i) var += (value_at(x, r * dim + i) - mean) * (value_at(x, r * dim + i) - mean);
        var /= double(dim);
        const double inv_std = 1.0 / std::sqrt(var + eps);
        const int64_t p = param_row(r) * dim;
        for (int64_t i = 0; i < dim; ++i)
            out[size_t(r * dim + i)] = (value_at(x, r * dim + i) - mean) * inv_std * value_at(weight, p + i) +
                                       (bias != nullptr ? value_at(*bias, p + i) : 0.0);
    }
    return out;
}

}  // namespace

Values layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, double eps) {
    return layer_norm_rows(x, weight, bias, eps, [](int64_t) { return int64_t(0); });
}

Values per_head_layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, double eps) {
    const int64_t heads = x.shape[1];
    return layer_norm_rows(x, weight, bias, eps, [heads](int64_t r) { return r % heads; });
}

Values add(const TensorView& x, const TensorView& y) {
    Values out = values_of(x);
    for (int64_t i = 0; i < x.numel(); ++i) out[size_t(i)] += value_at(y, i);
    return out;
}

Values scale(const TensorView& x, double s) {
    Values out = values_of(x);
    for (double& v : out) v *= s;
    return out;
}

Values softcap(const TensorView& x, double cap) {
    Values out = values_of(x);
    for (double& v : out) v = cap * std::tanh(v / cap);
    return out;
}

double activate(double x, ops::Activation act) {
    switch (act) {
        case ops::Activation::kSilu: return x / (1.0 + std::exp(-x));
        case ops::Activation::kGeluTanh: {
            const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
            return 0.5 * x * (1.0 + std::tanh(inner));
        }
        case ops::Activation::kGeluErf: return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
        case ops::Activation::kRelu: return x > 0 ? x : 0.0;
        case ops::Activation::kRelu2: return x > 0 ? x * x : 0.0;
    }
    TACO_CHECK_MSG(false, "activation {}", int(act));
    return 0;
}

Values gated_activation(const TensorView& gate, const TensorView& up, ops::Activation act) {
    Values out(size_t(gate.numel()));
    for (int64_t i = 0; i < gate.numel(); ++i) out[size_t(i)] = activate(value_at(gate, i), act) * value_at(up, i);
    return out;
}

Values activation(const TensorView& x, ops::Activation act) {
    Values out = values_of(x);
    for (double& v : out) v = activate(v, act);
    return out;
}

}  // namespace taco::ref
