// ops::paged_attention on a real GPU, for what the parity table cannot see: split-KV and the one-CTA walk give the
// same bits; a row's bits do not depend on the batch, on chunking or on prefill versus decode; f32 matches the CPU
// backend to fp32 rounding on long sequences with every option; bad metadata gives NaN rows and padding rows stay.
// Skipped (with the reason) where no GPU or driver is usable, as on CI.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "cuda_test_util.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/ops.h"

namespace taco {
namespace {

using Seqs = std::vector<std::pair<int, int>>;  // (cached tokens, new tokens) per sequence

struct Shape {
    int heads = 8, kv_heads = 2, head_dim = 128, block_size = 16;
    int num_blocks = 0;  // 0: as many as the sequences need, plus two
};

// A batch's metadata on the host.
struct HostBatch {
    std::vector<int32_t> query_start{0}, seq_lens, positions, tables;
    int max_blocks = 1, max_query_len = 0, max_seq_len = 0, num_tokens = 0;
};

// Host values rounded to dtype, stored in a host tensor of that dtype.
Tensor host_tensor(std::initializer_list<int64_t> dims, DType dtype, const std::vector<float>& values) {
    Tensor t = Tensor::empty(dims, dtype);
    for (size_t i = 0; i < values.size(); ++i) store_from_f32(t.view().data, dtype, i, values[i]);
    return t;
}

// The values as the device holds them: rounded to dtype (the CPU reference computes in f32 on these).
std::vector<float> rounded(std::vector<float> values, DType dtype) {
    Tensor t = host_tensor({int64_t(values.size())}, dtype, values);
    for (size_t i = 0; i < values.size(); ++i) values[i] = load_as_f32(t.view().data, dtype, i);
    return values;
}

std::vector<float> random_values(size_t n, std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

using testing_util::to_device;
using testing_util::to_host;

Tensor i32_tensor(std::initializer_list<int64_t> dims, const std::vector<int32_t>& v) {
    Tensor t = Tensor::empty(dims, DType::kI32);
    std::copy(v.begin(), v.end(), t.as<int32_t>());
    return t;
}

// A cache, queries and the batch on both sides, run through ops::paged_attention on CUDA and on the CPU.
class AttentionProblem {
public:
    AttentionProblem(const Shape& shape, DType dtype, uint32_t seed) : shape_(shape), dtype_(dtype), rng_(seed) {}

    // Fills a cache big enough for `seqs` (every slot random) and fixes the block assignment.
    void make_cache(const Seqs& seqs) {
        int needed = 2;
        for (auto [cached, fresh] : seqs) {
            needed += (cached + fresh + shape_.block_size - 1) / shape_.block_size;
            longest_ = std::max(longest_, cached + fresh);
        }
        num_blocks_ = std::max(needed, shape_.num_blocks);
        blocks_.resize(size_t(num_blocks_));
        std::iota(blocks_.begin(), blocks_.end(), 0);
        std::shuffle(blocks_.begin(), blocks_.end(), rng_);
        const size_t n = size_t(num_blocks_) * shape_.block_size * shape_.kv_heads * shape_.head_dim;
        const std::initializer_list<int64_t> dims = {num_blocks_, shape_.block_size, shape_.kv_heads, shape_.head_dim};
        k_values_ = random_values(n, rng_, -1, 1);
        v_values_ = random_values(n, rng_, -1, 1);
        k_host_ = host_tensor(dims, DType::kF32, rounded(k_values_, dtype_));
        v_host_ = host_tensor(dims, DType::kF32, rounded(v_values_, dtype_));
        k_dev_ = to_device(host_tensor(dims, dtype_, k_values_));
        v_dev_ = to_device(host_tensor(dims, dtype_, v_values_));
    }

    // Queries for a batch: q[token] drawn from `query_seed_of(sequence, position)` so that the same (sequence,
    // position) gets the same query in every batch.
    struct Run {
        HostBatch batch;
        Tensor q_host, q_dev, out_dev, query_start, seq_lens, positions, tables;
        ops::AttentionMetadata device_metadata() const {
            ops::AttentionMetadata m;
            m.query_start = query_start.view();
            m.seq_lens = seq_lens.view();
            m.positions = positions.view();
            m.block_tables = tables.view();
            m.max_query_len = batch.max_query_len;
            m.max_seq_len = batch.max_seq_len;
            return m;
        }
    };

    // seq_ids name each sequence's queries and blocks: the same id gets the same blocks and queries in any batch.
    Run prepare(const Seqs& seqs, const std::vector<int>& seq_ids, int padding = 0) {
        std::vector<int32_t> blocks;  // each sequence's blocks, by id, from the shuffled pool
        const int per_seq = max_blocks_per_id();
        for (int id : seq_ids)
            for (int i = 0; i < per_seq; ++i) blocks.push_back(blocks_[size_t(id * per_seq + i) % blocks_.size()]);
        Run run;
        // Each sequence's table takes its own per_seq blocks.
        run.batch = make_batch_for(seqs, blocks, per_seq, padding);
        const int t = run.batch.num_tokens, row = shape_.heads * shape_.head_dim;
        std::vector<float> q(size_t(t) * row);
        int token = 0;
        for (size_t s = 0; s < seqs.size(); ++s) {
            for (int p = seqs[s].first; p < seqs[s].first + seqs[s].second; ++p, ++token) {
                std::mt19937 qrng(uint32_t(seq_ids[s] * 100003 + p));
                const std::vector<float> v = random_values(size_t(row), qrng, -3, 3);
                std::copy(v.begin(), v.end(), q.begin() + size_t(token) * row);
            }
        }
        run.q_host = host_tensor({t, shape_.heads, shape_.head_dim}, DType::kF32, rounded(q, dtype_));
        run.q_dev = to_device(host_tensor({t, shape_.heads, shape_.head_dim}, dtype_, q));
        // Real rows start as NaN (what a kernel leaves unwritten shows), padding rows as 7 (they must keep it).
        std::vector<float> before(q.size(), 7.0f);
        std::fill(before.begin(), before.begin() + ptrdiff_t(run.batch.query_start.back()) * row, NAN);
        run.out_dev = to_device(host_tensor({t, shape_.heads, shape_.head_dim}, dtype_, before));
        const int64_t num_seqs = int64_t(seqs.size());
        run.query_start = to_device(i32_tensor({num_seqs + 1}, run.batch.query_start));
        run.seq_lens = to_device(i32_tensor({num_seqs}, run.batch.seq_lens));
        run.positions = to_device(i32_tensor({t}, run.batch.positions));
        run.tables = to_device(i32_tensor({num_seqs, run.batch.max_blocks}, run.batch.tables));
        return run;
    }

    // The CPU backend's output (f32 on the cache and queries as the device holds them).
    std::vector<float> cpu_output(const Run& run, const ops::AttentionParams& params) const {
        const int t = run.batch.num_tokens;
        ops::AttentionMetadata m;
        Tensor qs = i32_tensor({int64_t(run.batch.seq_lens.size()) + 1}, run.batch.query_start);
        Tensor sl = i32_tensor({int64_t(run.batch.seq_lens.size())}, run.batch.seq_lens);
        Tensor pos = i32_tensor({t}, run.batch.positions);
        Tensor tab = i32_tensor({int64_t(run.batch.seq_lens.size()), run.batch.max_blocks}, run.batch.tables);
        m.query_start = qs;
        m.seq_lens = sl;
        m.positions = pos;
        m.block_tables = tab;
        m.max_query_len = run.batch.max_query_len;
        m.max_seq_len = run.batch.max_seq_len;
        Tensor out = Tensor::zeros({t, shape_.heads, shape_.head_dim}, DType::kF32);
        ops::paged_attention(ExecContext::cpu(), run.q_host, k_host_, v_host_, m, params, out);
        return {out.as<float>(), out.as<float>() + out.numel()};
    }

    const TensorView& k_cache() const { return k_dev_.view(); }
    const TensorView& v_cache() const { return v_dev_.view(); }
    std::mt19937& rng() { return rng_; }

private:
    // Every id's table: room for 2200 keys, or the cache's longest sequence.
    int max_blocks_per_id() const { return std::max(2200, longest_) / shape_.block_size + 2; }
    HostBatch make_batch_for(const Seqs& seqs, const std::vector<int32_t>& blocks, int per_seq, int padding) {
        HostBatch b;
        b.max_blocks = per_seq;
        for (size_t s = 0; s < seqs.size(); ++s) {
            const auto [cached, fresh] = seqs[s];
            for (int i = 0; i < per_seq; ++i) b.tables.push_back(blocks[s * size_t(per_seq) + size_t(i)]);
            for (int p = cached; p < cached + fresh; ++p) b.positions.push_back(p);
            b.query_start.push_back(int32_t(b.positions.size()));
            b.seq_lens.push_back(cached + fresh);
            b.max_query_len = std::max(b.max_query_len, fresh);
            b.max_seq_len = std::max(b.max_seq_len, cached + fresh);
        }
        for (int i = 0; i < padding; ++i) b.positions.push_back(0);
        b.num_tokens = int(b.positions.size());
        return b;
    }

    Shape shape_;
    DType dtype_;
    std::mt19937 rng_;
    int num_blocks_ = 0, longest_ = 0;
    std::vector<int32_t> blocks_;
    std::vector<float> k_values_, v_values_;
    Tensor k_host_, v_host_, k_dev_, v_dev_;
};

std::vector<uint8_t> bytes_of(const TensorView& device) {
    Tensor h = to_host(device);
    const uint8_t* p = static_cast<const uint8_t*>(h.view().data);
    return {p, p + h.view().nbytes()};
}

std::vector<float> floats_of(const TensorView& device) {
    Tensor h = to_host(device);
    std::vector<float> v(size_t(h.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(h.view().data, h.view().dtype, i);
    return v;
}

// Every real row written with finite values, every padding row still 7.
void expect_written(const AttentionProblem::Run& run, int row_elements) {
    const std::vector<float> got = floats_of(run.out_dev);
    const size_t real = size_t(run.batch.query_start.back()) * size_t(row_elements);
    size_t not_finite = 0, padding_changed = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (i < real && !std::isfinite(got[i])) ++not_finite;
        if (i >= real && got[i] != 7.0f) ++padding_changed;
    }
    EXPECT_EQ(not_finite, 0u);
    EXPECT_EQ(padding_changed, 0u);
}

// The largest error of a real (token, head) row of run's output against `want`, over the row's largest magnitude.
double worst_row_error(const std::vector<float>& want, const AttentionProblem::Run& r, const Shape& shape) {
    const std::vector<float> got = floats_of(r.out_dev);
    const size_t row = size_t(shape.head_dim);
    double worst = 0;
    for (size_t begin = 0; begin + row <= size_t(r.batch.query_start.back()) * shape.heads * row; begin += row) {
        double magnitude = 0, diff = 0;
        for (size_t i = begin; i < begin + row; ++i) {
            magnitude = std::max(magnitude, double(std::abs(want[i])));
            diff = std::max(diff, std::abs(double(got[i]) - double(want[i])));
            if (std::isnan(got[i])) diff = INFINITY;
        }
        worst = std::max(worst, diff / std::max(magnitude, 1e-30));
    }
    return worst;
}

class CudaPagedAttention : public ::testing::Test {
protected:
    void SetUp() override {
        const Status status = cuda::init_backend(0);
        if (!status.is_ok()) GTEST_SKIP() << status.message();
        auto made = cuda::DeviceStream::create();
        ASSERT_TRUE(made.is_ok());
        stream_ = std::move(made).value();
        partials_ = Tensor::empty({int64_t(cuda::kMaxAttentionScratchBytes)}, DType::kU8, Device::kCuda);
        ctx_ = stream_->context(nullptr);
    }

    void run(const AttentionProblem& problem, AttentionProblem::Run& run, const ops::AttentionParams& params,
             cuda::SplitKv split, cuda::AttentionKernel kernel = cuda::AttentionKernel::kAuto) {
        cuda::paged_attention_with(ctx_, run.q_dev, problem.k_cache(), problem.v_cache(), run.device_metadata(), params,
                                   partials_, split, run.out_dev, kernel);
        stream_->synchronize();
    }

    // Every option (window, soft-capping, both ALiBi forms, head dims 16..256 and an odd one, block sizes 1..128)
    // against the CPU backend on the same rounded inputs: each row's largest error over its largest magnitude below
    // `tolerance`, split and not, with the kernel choice given.
    void expect_matches_the_cpu(DType dtype, double tolerance, cuda::AttentionKernel kernel);

    std::unique_ptr<cuda::DeviceStream> stream_;
    Tensor partials_;
    ExecContext ctx_;
};

ops::AttentionParams params_for(int head_dim) {
    ops::AttentionParams p;
    p.scale = float(1.0 / std::sqrt(double(head_dim)));
    return p;
}

// The rows of `token` in a [T, H, D] output.
std::vector<uint8_t> token_bytes(const std::vector<uint8_t>& all, int token, const Shape& s, DType dtype) {
    const size_t row = size_t(s.heads) * s.head_dim * dtype_size_bytes(dtype);
    return {all.begin() + ptrdiff_t(token * row), all.begin() + ptrdiff_t((token + 1) * row)};
}

TEST_F(CudaPagedAttention, SplitKvAndOneCtaGiveTheSameBits) {
    const Seqs seqs = {{1500, 1}, {2100, 1}, {0, 5}, {700, 3}, {40, 1}};
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
        for (Shape shape : {Shape{8, 2, 128, 16}, Shape{4, 4, 80, 1}, Shape{16, 1, 256, 128}, Shape{6, 3, 8, 16}}) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " d" + std::to_string(shape.head_dim) + " block" +
                         std::to_string(shape.block_size));
            AttentionProblem problem(shape, dtype, 11);
            problem.make_cache(seqs);
            ops::AttentionParams params = params_for(shape.head_dim);
            params.sliding_window = shape.head_dim == 80 ? 900 : 0;
            AttentionProblem::Run a = problem.prepare(seqs, {0, 1, 2, 3, 4}, 2);
            AttentionProblem::Run b = problem.prepare(seqs, {0, 1, 2, 3, 4}, 2);
            run(problem, a, params, cuda::SplitKv::kNever);
            run(problem, b, params, cuda::SplitKv::kAlways);
            expect_written(a, shape.heads * shape.head_dim);
            EXPECT_EQ(bytes_of(a.out_dev), bytes_of(b.out_dev));
        }
    }
}

// Rows of many partitions: the merge kernel folds a row of one chunk of 32 partitions chunk-wise and a longer row in
// blocks of 256 scales-first (TACO_CUDA_MERGE_SCALES_FIRST=0 folds every row chunk-wise), so rows past 4k and past
// 32k keys cross chunks and blocks, one from a window's first partition; split, they must still have the bits of the
// one-CTA walk.
TEST_F(CudaPagedAttention, SplitKvGivesTheOneCtaBitsOverManyPartitions) {
    // 4,095 cached tokens and the new one: 4,096 keys in 32 partitions, the longest row of one chunk; 4,100 cached:
    // 33 partitions, the shortest scales-first row.
    const Seqs seqs = {{33000, 1}, {4100, 1}, {8191, 1}, {4095, 1}};
    for (DType dtype : {DType::kBF16, DType::kF32}) {
        for (const int window : {0, 20000}) {
            const Shape shape = window == 0 ? Shape{8, 2, 64, 16} : Shape{4, 2, 128, 16};
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " window " + std::to_string(window));
            AttentionProblem problem(shape, dtype, 23);
            problem.make_cache(seqs);
            ops::AttentionParams params = params_for(shape.head_dim);
            params.sliding_window = window;
            AttentionProblem::Run a = problem.prepare(seqs, {0, 1, 2, 3});
            AttentionProblem::Run b = problem.prepare(seqs, {0, 1, 2, 3});
            run(problem, a, params, cuda::SplitKv::kNever);
            run(problem, b, params, cuda::SplitKv::kAlways);
            expect_written(a, shape.heads * shape.head_dim);
            EXPECT_EQ(bytes_of(a.out_dev), bytes_of(b.out_dev));
        }
    }
}

TEST_F(CudaPagedAttention, ARowDoesNotDependOnTheBatchOrOnPrefillVersusDecode) {
    const Shape shape{8, 2, 64, 16};
    for (DType dtype : {DType::kBF16, DType::kF32}) {
        SCOPED_TRACE(dtype_name(dtype));
        AttentionProblem problem(shape, dtype, 5);
        problem.make_cache({{2100, 0}, {2100, 0}, {2100, 0}, {2100, 0}});
        const ops::AttentionParams params = params_for(shape.head_dim);
        // Sequence 0 decoding at position 1300: alone, then beside a prefill chunk and other decode rows.
        AttentionProblem::Run alone = problem.prepare({{1300, 1}}, {0});
        AttentionProblem::Run batched = problem.prepare({{40, 9}, {1300, 1}, {2000, 1}, {3, 1}}, {1, 0, 2, 3}, 3);
        // One side walks the partitions in one CTA, the other splits them (kAuto does for these few CTAs).
        run(problem, alone, params, cuda::SplitKv::kNever);
        run(problem, batched, params, cuda::SplitKv::kAuto);
        expect_written(batched, shape.heads * shape.head_dim);
        EXPECT_EQ(token_bytes(bytes_of(alone.out_dev), 0, shape, dtype),
                  token_bytes(bytes_of(batched.out_dev), 9, shape, dtype));
        // Sequence 1 as a prefill chunk of positions 1000..1015, then position 1012 as a decode row.
        AttentionProblem::Run chunk = problem.prepare({{1000, 16}}, {1});
        AttentionProblem::Run decode = problem.prepare({{1012, 1}}, {1});
        run(problem, chunk, params, cuda::SplitKv::kAlways);
        run(problem, decode, params, cuda::SplitKv::kNever);
        expect_written(chunk, shape.heads * shape.head_dim);
        EXPECT_EQ(token_bytes(bytes_of(chunk.out_dev), 12, shape, dtype),
                  token_bytes(bytes_of(decode.out_dev), 0, shape, dtype));
    }
}

// Decode steps run on the decode kernel (paged_attention_decode.cu), other steps on the general tensor-core kernel:
// a decode row must have the general kernel's bits, split or not, at every head dim, group size (head chunks of up to
// 16 heads: 20 makes two), block size and option, with rows at the edges of tiles and partitions.
TEST_F(CudaPagedAttention, TheDecodeKernelHasTheBitsOfTheGeneralKernel) {
    struct Case {
        Shape shape;
        int window = 0;
        float softcap = 0;
        int alibi = 0;  // 1: slopes, 2: Falcon's bf16 key positions
    };
    // Group sizes 1 to 20 (9 and up fill the mma's rows 8-15; 20 makes two chunks), every option, head dims 64-256.
    const std::vector<Case> cases = {
        {{32, 8, 128, 16}},         {{8, 2, 128, 16}, 300},      {{4, 1, 80, 1}, 0, 0, 1}, {{8, 8, 256, 128}, 0, 30.0f},
        {{16, 4, 64, 16}, 0, 0, 2}, {{6, 2, 96, 32}, 100},       {{40, 2, 64, 16}},        {{4, 4, 80, 7}, 65},
        {{12, 4, 96, 8}, 0, 20, 1}, {{18, 2, 128, 16}, 0, 0, 1}, {{32, 2, 64, 16}, 500},
    };
    const Seqs seqs = {{0, 1}, {63, 1}, {64, 1}, {127, 1}, {128, 1}, {1000, 1}, {2100, 1}, {191, 1}};
    std::vector<int> ids(seqs.size());
    std::iota(ids.begin(), ids.end(), 0);
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " heads " + std::to_string(c.shape.heads) + "/" +
                         std::to_string(c.shape.kv_heads) + " d" + std::to_string(c.shape.head_dim) + " block" +
                         std::to_string(c.shape.block_size));
            AttentionProblem problem(c.shape, dtype, 17);
            problem.make_cache(seqs);
            ops::AttentionParams params = params_for(c.shape.head_dim);
            params.sliding_window = c.window;
            params.logit_softcap = c.softcap;
            std::vector<float> slopes;
            for (int h = 0; h < c.shape.heads; ++h)
                slopes.push_back(float(std::pow(2.0, -8.0 * (h + 1) / c.shape.heads)));
            Tensor slopes_dev = to_device(host_tensor({c.shape.heads}, DType::kF32, slopes));
            if (c.alibi != 0) params.alibi_slopes = slopes_dev;
            params.alibi_bf16_key_positions = c.alibi == 2;
            AttentionProblem::Run general = problem.prepare(seqs, ids, 3);
            run(problem, general, params, cuda::SplitKv::kNever, cuda::AttentionKernel::kTiled);
            expect_written(general, c.shape.heads * c.shape.head_dim);
            for (cuda::SplitKv split : {cuda::SplitKv::kNever, cuda::SplitKv::kAlways, cuda::SplitKv::kAuto}) {
                for (cuda::AttentionKernel kernel : {cuda::AttentionKernel::kDecode, cuda::AttentionKernel::kAuto}) {
                    AttentionProblem::Run decode = problem.prepare(seqs, ids, 3);
                    run(problem, decode, params, split, kernel);
                    EXPECT_EQ(bytes_of(general.out_dev), bytes_of(decode.out_dev))
                        << "split " << int(split) << ", kernel " << int(kernel);
                }
            }
        }
    }
}

void CudaPagedAttention::expect_matches_the_cpu(DType dtype, double tolerance, cuda::AttentionKernel kernel) {
    struct Case {
        Shape shape;
        Seqs seqs;
        int window = 0;
        float softcap = 0;
        int alibi = 0;  // 1: slopes, 2: Falcon's bf16 key positions
    };
    const std::vector<Case> cases = {
        {{8, 2, 128, 16}, {{1500, 1}, {0, 7}, {2100, 1}, {600, 4}}}, {{4, 1, 80, 1}, {{1030, 2}, {5, 3}}, 300},
        {{8, 8, 256, 128}, {{1100, 1}, {129, 30}}, 0, 30.0f},        {{16, 4, 64, 16}, {{1200, 3}, {0, 9}}, 0, 0, 2},
        {{6, 2, 16, 32}, {{900, 1}, {33, 20}}, 100, 0, 1},           {{2, 1, 33, 7}, {{700, 5}, {0, 1}}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE("d" + std::to_string(c.shape.head_dim) + " block" + std::to_string(c.shape.block_size));
        AttentionProblem problem(c.shape, dtype, 3);
        problem.make_cache(c.seqs);
        ops::AttentionParams params = params_for(c.shape.head_dim);
        params.sliding_window = c.window;
        params.logit_softcap = c.softcap;
        std::vector<float> slopes;
        for (int h = 0; h < c.shape.heads; ++h) {
            const float slope = float(std::pow(2.0, -8.0 * (h + 1) / c.shape.heads));
            slopes.push_back(c.alibi == 2 ? bf16_to_f32(f32_to_bf16(slope)) : slope);
        }
        Tensor slopes_host = host_tensor({c.shape.heads}, DType::kF32, slopes);
        Tensor slopes_dev = to_device(slopes_host);
        params.alibi_bf16_key_positions = c.alibi == 2;
        std::vector<int> ids(c.seqs.size());
        std::iota(ids.begin(), ids.end(), 0);
        ops::AttentionParams cpu_params = params;
        if (c.alibi != 0) params.alibi_slopes = slopes_dev, cpu_params.alibi_slopes = slopes_host;
        for (cuda::SplitKv split : {cuda::SplitKv::kNever, cuda::SplitKv::kAlways}) {
            AttentionProblem::Run r = problem.prepare(c.seqs, ids, 1);
            const std::vector<float> want = problem.cpu_output(r, cpu_params);
            run(problem, r, params, split, kernel);
            EXPECT_LT(worst_row_error(want, r, c.shape), tolerance) << "split " << int(split);
            expect_written(r, c.shape.heads * c.shape.head_dim);
        }
    }
}

TEST_F(CudaPagedAttention, F32MatchesTheCpuBackendWithEveryOption) {
    expect_matches_the_cpu(DType::kF32, 2e-5, cuda::AttentionKernel::kAuto);
}

// f16/bf16 run on the tensor cores (head dims 16, 64, 80, 128, 256 here; 33 falls back to the CUDA cores), with P
// rounded to the activation dtype before P V: within a few of its epsilons of the CPU's fp32 softmax, as the CUDA
// cores' kernel is.
TEST_F(CudaPagedAttention, HalfPrecisionMatchesTheCpuBackendOnBothKernels) {
    for (cuda::AttentionKernel kernel : {cuda::AttentionKernel::kAuto, cuda::AttentionKernel::kCudaCores}) {
        SCOPED_TRACE(kernel == cuda::AttentionKernel::kAuto ? "tensor cores" : "CUDA cores");
        expect_matches_the_cpu(DType::kBF16, 3e-2, kernel);
        expect_matches_the_cpu(DType::kF16, 4e-3, kernel);
    }
}

// cuDNN's fused attention (cudnn_attention.h) for prefill steps: within the same bounds of the CPU backend as our
// tensor-core kernel, on chunks from position 0, chunks over a cached prefix (bottom-right causal), a decode row
// beside them, GQA groups of 4 and of 1, and padding rows left alone; with 1, 2, 3 and 5 sequences (plans are built
// for a power of two of them, the rest sequences of no query and no keys). Skipped where cuDNN is not loadable, unless
// TACO_REQUIRE_CUDNN=1 (the device round trip sets it where it finds cuDNN).
TEST_F(CudaPagedAttention, CudnnAttentionMatchesTheCpuBackend) {
    if (const std::string why = cuda::cudnn_attention_unavailable(); !why.empty()) {
        const char* require = std::getenv("TACO_REQUIRE_CUDNN");
        if (require == nullptr || std::string(require) != "1") GTEST_SKIP() << why;
        FAIL() << why;
    }
    struct Case {
        Shape shape;
        Seqs seqs;
    };
    const std::vector<Case> cases = {
        {{32, 8, 128, 16}, {{0, 300}}},
        {{8, 2, 64, 16}, {{200, 40}, {0, 257}, {99, 1}}},
        {{32, 8, 128, 16}, {{1000, 64}, {0, 130}, {1500, 1}}},
        {{4, 4, 128, 32}, {{0, 600}, {700, 90}}},
        {{32, 8, 128, 16}, {{0, 260}, {40, 1}, {300, 300}, {0, 16}, {1000, 2}}},
    };
    for (DType dtype : {DType::kBF16, DType::kF16}) {
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " heads " + std::to_string(c.shape.heads) + "/" +
                         std::to_string(c.shape.kv_heads) + " sequences " + std::to_string(c.seqs.size()));
            AttentionProblem problem(c.shape, dtype, 11);
            problem.make_cache(c.seqs);
            const ops::AttentionParams params = params_for(c.shape.head_dim);
            std::vector<int> ids(c.seqs.size());
            std::iota(ids.begin(), ids.end(), 0);
            AttentionProblem::Run r = problem.prepare(c.seqs, ids, 2);
            const std::vector<float> want = problem.cpu_output(r, params);
            // cuDNN's own reason where it cannot run the step (kCudnn would abort the suite with it).
            ASSERT_EQ(cuda::cudnn_paged_attention(ctx_, r.q_dev, problem.k_cache(), problem.v_cache(),
                                                  r.device_metadata(), params, r.out_dev),
                      "");
            stream_->synchronize();
            EXPECT_LT(worst_row_error(want, r, c.shape), dtype == DType::kBF16 ? 3e-2 : 4e-3);
            expect_written(r, c.shape.heads * c.shape.head_dim);
        }
    }
}

TEST_F(CudaPagedAttention, RowsWithUnusableMetadataComeOutNan) {
    const Shape shape{4, 2, 64, 16};
    AttentionProblem problem(shape, DType::kBF16, 9);
    problem.make_cache({{1200, 1}, {1200, 1}});
    for (cuda::SplitKv split : {cuda::SplitKv::kNever, cuda::SplitKv::kAlways}) {
        AttentionProblem::Run r = problem.prepare({{1000, 1}, {1100, 1}}, {0, 1});
        // Sequence 1's position past its keys: its rows are NaN, sequence 0's are finite.
        const int32_t bad_position = 5000;
        ASSERT_EQ(
            cudaMemcpy(static_cast<int32_t*>(r.positions.view().data) + 1, &bad_position, 4, cudaMemcpyHostToDevice),
            cudaSuccess);
        // Outputs start finite here, so the NaN rows must have been written.
        Tensor sevens = host_tensor({2, shape.heads, shape.head_dim}, DType::kBF16,
                                    std::vector<float>(size_t(2 * shape.heads * shape.head_dim), 7.0f));
        ASSERT_EQ(cudaMemcpy(r.out_dev.view().data, sevens.view().data, sevens.view().nbytes(), cudaMemcpyHostToDevice),
                  cudaSuccess);
        run(problem, r, params_for(shape.head_dim), split);
        const std::vector<float> got = floats_of(r.out_dev);
        const size_t token = size_t(shape.heads) * shape.head_dim;
        for (size_t i = 0; i < token; ++i) ASSERT_TRUE(std::isfinite(got[i]) && got[i] != 7.0f) << i;
        for (size_t i = token; i < 2 * token; ++i) ASSERT_TRUE(std::isnan(got[i])) << i;
    }
}

TEST_F(CudaPagedAttention, ABadBlockIdPoisonsOnlyTheRowsThatSeeItsKey) {
    // Block size 4 and a window of 100: position 1000 sees keys 901..1000, and the 32-key tile staged first starts
    // at key 896, so it also holds block 224 (keys 896..899) that no row sees. Unmapping it (-1, as a cache freeing
    // blocks past the window would) must leave the rows' bits alone; a bad id of a block sequence 1 sees (262: keys
    // 1048..1051 of its window 1001..1100) makes that sequence's rows NaN and no other's.
    const Shape shape{4, 2, 64, 4};
    AttentionProblem problem(shape, DType::kBF16, 13);
    problem.make_cache({{1200, 1}, {1200, 1}});
    ops::AttentionParams params = params_for(shape.head_dim);
    params.sliding_window = 100;
    for (cuda::SplitKv split : {cuda::SplitKv::kNever, cuda::SplitKv::kAlways}) {
        SCOPED_TRACE(int(split));
        AttentionProblem::Run good = problem.prepare({{1000, 1}, {1100, 1}}, {0, 1});
        AttentionProblem::Run bad = problem.prepare({{1000, 1}, {1100, 1}}, {0, 1});
        int32_t* tables = static_cast<int32_t*>(bad.tables.view().data);
        const int32_t unmapped = -1, outside = 1 << 30;
        ASSERT_EQ(cudaMemcpy(tables + 224, &unmapped, 4, cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(tables + bad.batch.max_blocks + 262, &outside, 4, cudaMemcpyHostToDevice), cudaSuccess);
        run(problem, good, params, split);
        run(problem, bad, params, split);
        expect_written(good, shape.heads * shape.head_dim);
        const std::vector<uint8_t> good_bytes = bytes_of(good.out_dev), bad_bytes = bytes_of(bad.out_dev);
        EXPECT_EQ(token_bytes(good_bytes, 0, shape, DType::kBF16), token_bytes(bad_bytes, 0, shape, DType::kBF16));
        const std::vector<float> got = floats_of(bad.out_dev);
        const size_t token = size_t(shape.heads) * shape.head_dim;
        for (size_t i = token; i < 2 * token; ++i) ASSERT_TRUE(std::isnan(got[i])) << i;
    }
}

TEST_F(CudaPagedAttention, TheOpTakesItsScratchFromTheWorkspaceAndSplitsLongDecodes) {
    // Through ops::paged_attention with a sized device workspace: the dry run reserves the partials, the real run
    // gives the same bits as the unsplit walk.
    const Shape shape{8, 2, 128, 16};
    AttentionProblem problem(shape, DType::kBF16, 21);
    problem.make_cache({{2100, 1}});
    const ops::AttentionParams params = params_for(shape.head_dim);
    AttentionProblem::Run r = problem.prepare({{2100, 1}}, {0});
    Workspace workspace(MemoryKind::kDevice);
    ExecContext ctx = stream_->context(&workspace);
    ctx.dry_run = true;
    ops::paged_attention(ctx, r.q_dev, problem.k_cache(), problem.v_cache(), r.device_metadata(), params, r.out_dev);
    EXPECT_EQ(workspace.high_water_bytes(),
              (cuda::paged_attention_scratch_bytes(1, shape.heads, shape.head_dim, 2101) + 255) / 256 * 256);
    workspace.reserve(workspace.high_water_bytes());
    ctx.dry_run = false;
    workspace.reset();
    ops::paged_attention(ctx, r.q_dev, problem.k_cache(), problem.v_cache(), r.device_metadata(), params, r.out_dev);
    EXPECT_EQ(workspace.mark(), 0u);  // handed back
    stream_->synchronize();
    expect_written(r, shape.heads * shape.head_dim);
    AttentionProblem::Run unsplit = problem.prepare({{2100, 1}}, {0});
    run(problem, unsplit, params, cuda::SplitKv::kNever);
    EXPECT_EQ(bytes_of(r.out_dev), bytes_of(unsplit.out_dev));
}

}  // namespace
}  // namespace taco
