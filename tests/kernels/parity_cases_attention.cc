// Parity cases of the attention ops: rotary embedding (neox and interleaved, partial, LongRoPE table offsets), paged
// KV writes with padding slots, and paged attention over batches of sequences with cached prefixes, chunks, decode
// rows and padding tokens, over head dims, GQA groups, block sizes, sliding windows, soft-capping and both ALiBi
// forms.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "kernels/ops.h"
#include "parity_harness.h"

namespace taco::parity {
namespace {

// cos and sin tables [parts * positions, rotary_dim / 2], f32: row part * positions + p holds the angles
// p * base^(-2i / rotary_dim) * factors[part] (LongRoPE: short factors in part 0, long ones in part 1).
std::pair<TensorView, TensorView> rotary_tables(ParityRun& r, int64_t positions, int rotary_dim,
                                                const std::vector<double>& factors) {
    const int64_t half = rotary_dim / 2, rows = positions * int64_t(factors.size());
    ref::Values cos(size_t(rows * half)), sin(cos.size());
    for (int64_t row = 0; row < rows; ++row) {
        for (int64_t i = 0; i < half; ++i) {
            const double angle = double(row % positions) * std::pow(10000.0, -2.0 * double(i) / rotary_dim) *
                                 factors[size_t(row / positions)];
            cos[size_t(row * half + i)] = std::cos(angle);
            sin[size_t(row * half + i)] = std::sin(angle);
        }
    }
    return {r.host_values({rows, half}, DType::kF32, cos), r.host_values({rows, half}, DType::kF32, sin)};
}

// The tables' factors: LongRoPE's long half after the short one.
std::vector<double> rotary_factors(bool long_rope) {
    return long_rope ? std::vector<double>{1.0, 0.37} : std::vector<double>{1.0};
}

// Random positions below max_positions and, with LongRoPE, table offsets sending some tokens to the long half.
std::pair<std::vector<int32_t>, std::vector<int32_t>> random_positions(ParityRun& r, int64_t tokens,
                                                                       int64_t max_positions, bool long_rope) {
    std::vector<int32_t> positions, offsets;
    for (int64_t t = 0; t < tokens; ++t) {
        positions.push_back(int32_t(r.uniform_int(0, max_positions - 1)));
        offsets.push_back(long_rope && r.uniform_int(0, 1) == 1 ? int32_t(max_positions) : 0);
    }
    return {positions, offsets};
}

CaseGroup rotary_group(const std::string& name, bool neox_style) {
    struct Shape {
        int64_t tokens, heads, head_dim;
        int rotary_dim;
        bool long_rope;  // a second table half after the first, picked per token by table_offsets
    };
    CaseGroup group{"rotary_embedding", name, {}};
    for (Shape s : {Shape{1, 1, 2, 2, false},
                    {5, 4, 64, 64, false},
                    {7, 2, 80, 20, false},
                    {3, 3, 96, 32, false},
                    {4, 2, 256, 64, false},
                    {9, 4, 128, 128, true},
                    {6, 2, 96, 48, true}}) {
        group.cases.push_back(
            {fmt::format("t{}_heads{}_d{}_rot{}{}", s.tokens, s.heads, s.head_dim, s.rotary_dim,
                         s.long_rope ? "_long_rope" : ""),
             [=](ParityRun& r) {
                 const int64_t max_positions = 64;
                 auto [cos, sin] = rotary_tables(r, max_positions, s.rotary_dim, rotary_factors(s.long_rope));
                 auto [positions, offsets] = random_positions(r, s.tokens, max_positions, s.long_rope);
                 if (s.tokens > 1) positions[0] = 0, positions[1] = int32_t(max_positions - 1);
                 TensorView x = r.host_act({s.tokens, s.heads, s.head_dim}, -2, 2);
                 TensorView pos = r.host_i32({s.tokens}, positions);
                 TensorView off = s.long_rope ? r.host_i32({s.tokens}, offsets) : TensorView();
                 TensorView device_x = r.device(x);
                 ops::rotary_embedding(r.ctx(), device_x, r.device(pos), s.long_rope ? r.device(off) : TensorView(),
                                       r.device(cos), r.device(sin), s.rotary_dim, neox_style);
                 r.expect_close("x", device_x, ref::rotary_embedding(x, pos, off, cos, sin, s.rotary_dim, neox_style));
             }});
    }
    return group;
}

// Rotary of q and k and the KV write in one op, against the reference of the three: q and k rotated, the caches hold
// the k the op stored and v. Partial rotary (the rest of k copied), LongRoPE offsets,
// padding slots, an f32 cache.
CaseGroup rotary_write_kv_group(bool neox_style) {
    struct Shape {
        int64_t tokens, heads, kv_heads, head_dim;
        int rotary_dim;
        bool long_rope, f32_cache;
    };
    CaseGroup group{"rotary_write_kv", neox_style ? "neox" : "interleaved", {}};
    for (Shape s : {Shape{1, 32, 8, 128, 128, false, false},
                    {5, 4, 2, 64, 64, false, true},
                    {7, 4, 4, 80, 20, false, false},
                    {9, 4, 1, 128, 128, true, false},
                    {6, 2, 2, 96, 48, true, true},
                    {3, 8, 2, 256, 64, false, false}}) {
        group.cases.push_back(
            {fmt::format("t{}_heads{}_kv{}_d{}_rot{}{}{}", s.tokens, s.heads, s.kv_heads, s.head_dim, s.rotary_dim,
                         s.long_rope ? "_long_rope" : "", s.f32_cache ? "_f32_cache" : ""),
             [=](ParityRun& r) {
                 const int64_t max_positions = 64, block_size = 16;
                 auto [cos, sin] = rotary_tables(r, max_positions, s.rotary_dim, rotary_factors(s.long_rope));
                 auto [positions, offsets] = random_positions(r, s.tokens, max_positions, s.long_rope);
                 const int64_t num_blocks = (s.tokens + block_size - 1) / block_size + 2;
                 std::vector<int64_t> slots(size_t(num_blocks * block_size));
                 std::iota(slots.begin(), slots.end(), 0);
                 std::shuffle(slots.begin(), slots.end(), r.rng());
                 slots.resize(size_t(s.tokens));
                 if (s.tokens > 2) slots[1] = -1;  // a padding token: rotated, not written
                 TensorView q = r.host_act({s.tokens, s.heads, s.head_dim}, -2, 2);
                 TensorView k = r.host_act({s.tokens, s.kv_heads, s.head_dim}, -2, 2);
                 TensorView v = r.host_act({s.tokens, s.kv_heads, s.head_dim}, -2, 2);
                 TensorView pos = r.host_i32({s.tokens}, positions);
                 TensorView off = s.long_rope ? r.host_i32({s.tokens}, offsets) : TensorView();
                 const DType cache_dtype = s.f32_cache ? DType::kF32 : r.act();
                 TensorView k_cache =
                     r.host_random({num_blocks, block_size, s.kv_heads, s.head_dim}, cache_dtype, -1, 1);
                 TensorView v_cache =
                     r.host_random({num_blocks, block_size, s.kv_heads, s.head_dim}, cache_dtype, -1, 1);
                 TensorView slot_mapping = r.host_i64({s.tokens}, slots);
                 TensorView device_q = r.device(q), device_k = r.device(k);
                 TensorView device_k_cache = r.device(k_cache), device_v_cache = r.device(v_cache);
                 ops::rotary_write_kv(r.ctx(), device_q, device_k, r.device(v), r.device(pos),
                                      s.long_rope ? r.device(off) : TensorView(), r.device(cos), r.device(sin),
                                      s.rotary_dim, neox_style, r.device(slot_mapping), device_k_cache, device_v_cache);
                 r.expect_close("q", device_q, ref::rotary_embedding(q, pos, off, cos, sin, s.rotary_dim, neox_style));
                 const ref::Values k_rotated = ref::rotary_embedding(k, pos, off, cos, sin, s.rotary_dim, neox_style);
                 r.expect_close("k", device_k, k_rotated);
                 // The cache holds the k the op stored (checked above), converted as write_kv_cache does.
                 TensorView k_stored = r.host_values({s.tokens, s.kv_heads, s.head_dim}, r.act(), r.read(device_k));
                 const ref::KvCache want = ref::write_kv_cache(k_stored, v, slot_mapping, k_cache, v_cache);
                 r.expect_close("k_cache", device_k_cache, want.k);
                 r.expect_close("v_cache", device_v_cache, want.v);
             }});
    }
    return group;
}

// f32_cache: an f32 cache whatever the activation dtype (exact from any of them); otherwise the cache has the
// activation dtype.
CaseGroup write_kv_cache_group(bool f32_cache) {
    CaseGroup group{"write_kv_cache", f32_cache ? "f32_cache" : "slots", {}};
    for (auto [tokens, block_size, kv_heads, head_dim] :
         {std::array<int64_t, 4>{1, 16, 1, 64}, {9, 8, 2, 80}, {20, 16, 8, 128}, {6, 1, 2, 96}}) {
        group.cases.push_back(
            {fmt::format("t{}_block{}_kv{}_d{}", tokens, block_size, kv_heads, head_dim), [=](ParityRun& r) {
                 const int64_t num_blocks = (tokens + block_size - 1) / block_size + 2;
                 std::vector<int64_t> slots(size_t(num_blocks * block_size));
                 std::iota(slots.begin(), slots.end(), 0);
                 std::shuffle(slots.begin(), slots.end(), r.rng());
                 slots.resize(size_t(tokens));
                 if (tokens > 2) slots[1] = -1, slots[size_t(tokens - 1)] = -1;  // padding tokens
                 TensorView k = r.host_act({tokens, kv_heads, head_dim}), v = r.host_act({tokens, kv_heads, head_dim});
                 const DType cache_dtype = f32_cache ? DType::kF32 : r.act();
                 TensorView k_cache = r.host_random({num_blocks, block_size, kv_heads, head_dim}, cache_dtype, -1, 1);
                 TensorView v_cache = r.host_random({num_blocks, block_size, kv_heads, head_dim}, cache_dtype, -1, 1);
                 TensorView slot_mapping = r.host_i64({tokens}, slots);
                 TensorView device_k_cache = r.device(k_cache), device_v_cache = r.device(v_cache);
                 ops::write_kv_cache(r.ctx(), r.device(k), r.device(v), r.device(slot_mapping), device_k_cache,
                                     device_v_cache);
                 const ref::KvCache want = ref::write_kv_cache(k, v, slot_mapping, k_cache, v_cache);
                 r.expect_close("k_cache", device_k_cache, want.k);
                 r.expect_close("v_cache", device_v_cache, want.v);
             }});
    }
    return group;
}

enum class Alibi { kNone, kSlopes, kFalcon };

struct AttentionCase {
    std::string name;
    int64_t heads = 4, kv_heads = 2, head_dim = 64, block_size = 16;
    std::vector<std::pair<int64_t, int64_t>> seqs;  // (cached tokens, new tokens) per sequence
    int64_t padding_tokens = 0;                     // rows past query_start[S]
    int sliding_window = 0;
    float softcap = 0;
    Alibi alibi = Alibi::kNone;
    double q_range = 3;      // |q| elements up to this: peaked enough softmaxes
    bool f32_cache = false;  // the cache in f32 whatever the activation dtype (CUDA allows it with f16 / bf16 q)
    // Block table entries of blocks wholly before every window of their sequence are -1 (unmapped, as a cache that
    // frees them would leave them): no row reads them, so none may depend on them.
    bool unmap_before_window = false;
};

// A batch of sequences over a cache whose blocks are shuffled and whose unused slots hold other values; block table
// entries past a sequence's blocks point at a block of another sequence.
void run_attention(ParityRun& r, const AttentionCase& c) {
    const int64_t num_seqs = int64_t(c.seqs.size());
    int64_t tokens = c.padding_tokens, num_blocks = 1, max_blocks = 1;
    for (auto [cached, fresh] : c.seqs) {
        tokens += fresh;
        num_blocks += (cached + fresh + c.block_size - 1) / c.block_size;
        max_blocks = std::max(max_blocks, (cached + fresh + c.block_size - 1) / c.block_size + 1);
    }
    std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), r.rng());
    std::vector<int32_t> query_start = {0}, seq_lens, positions, tables;
    size_t next_block = 0;
    int32_t max_query_len = 0, max_seq_len = 0;
    for (auto [cached, fresh] : c.seqs) {
        const int64_t len = cached + fresh, used = (len + c.block_size - 1) / c.block_size;
        // The first key any query of the sequence sees (its first query's window start).
        const int64_t first_key = c.sliding_window > 0 ? std::max<int64_t>(0, cached - c.sliding_window + 1) : 0;
        for (int64_t b = 0; b < max_blocks; ++b) {
            const int32_t block = b < used ? blocks[next_block++] : blocks.back();
            tables.push_back(c.unmap_before_window && (b + 1) * c.block_size <= first_key ? -1 : block);
        }
        for (int64_t p = cached; p < len; ++p) positions.push_back(int32_t(p));
        query_start.push_back(int32_t(positions.size()));
        seq_lens.push_back(int32_t(len));
        max_query_len = std::max(max_query_len, int32_t(fresh));
        max_seq_len = std::max(max_seq_len, int32_t(len));
    }
    for (int64_t i = 0; i < c.padding_tokens; ++i) positions.push_back(0);
    ref::Values slopes;
    for (int64_t h = 0; h < c.heads; ++h) {
        const double slope = std::pow(2.0, -8.0 * double(h + 1) / double(c.heads));
        slopes.push_back(c.alibi == Alibi::kFalcon ? ref::round_to_bf16(slope) : slope);
    }

    TensorView q = r.host_act({tokens, c.heads, c.head_dim}, -c.q_range, c.q_range);
    const DType cache_dtype = c.f32_cache ? DType::kF32 : r.act();
    TensorView k_cache = r.host_random({num_blocks, c.block_size, c.kv_heads, c.head_dim}, cache_dtype, -1, 1);
    TensorView v_cache = r.host_random({num_blocks, c.block_size, c.kv_heads, c.head_dim}, cache_dtype, -1, 1);
    TensorView out_before = r.host_act({tokens, c.heads, c.head_dim}, 5, 6);  // padding rows keep these
    ops::AttentionMetadata host;
    host.query_start = r.host_i32({num_seqs + 1}, query_start);
    host.seq_lens = r.host_i32({num_seqs}, seq_lens);
    host.positions = r.host_i32({tokens}, positions);
    host.block_tables = r.host_i32({num_seqs, max_blocks}, tables);
    host.max_query_len = max_query_len;
    host.max_seq_len = max_seq_len;
    ops::AttentionParams params;
    params.scale = float(1.0 / std::sqrt(double(c.head_dim)));
    params.sliding_window = c.sliding_window;
    params.logit_softcap = c.softcap;
    params.alibi_bf16_key_positions = c.alibi == Alibi::kFalcon;
    TensorView host_slopes = r.host_values({c.heads}, DType::kF32, slopes);
    if (c.alibi != Alibi::kNone) params.alibi_slopes = host_slopes;

    ops::AttentionMetadata device = host;
    device.query_start = r.device(host.query_start);
    device.seq_lens = r.device(host.seq_lens);
    device.positions = r.device(host.positions);
    device.block_tables = r.device(host.block_tables);
    ops::AttentionParams device_params = params;
    if (c.alibi != Alibi::kNone) device_params.alibi_slopes = r.device(host_slopes);
    TensorView out = r.device(out_before);
    ops::paged_attention(r.ctx(), r.device(q), r.device(k_cache), r.device(v_cache), device, device_params, out);
    r.expect_close("out", out, ref::paged_attention(q, k_cache, v_cache, host, params, out_before));
}

std::string describe(const AttentionCase& c) {
    std::string s = fmt::format("{}_heads{}_kv{}_d{}_block{}", c.name, c.heads, c.kv_heads, c.head_dim, c.block_size);
    for (auto [cached, fresh] : c.seqs) s += fmt::format("_{}+{}", cached, fresh);
    if (c.padding_tokens > 0) s += fmt::format("_pad{}", c.padding_tokens);
    if (c.f32_cache) s += "_f32_cache";
    if (c.unmap_before_window) s += "_unmapped_before_window";
    return s;
}

CaseGroup attention_group(const std::string& name, const std::vector<AttentionCase>& cases) {
    CaseGroup group{"paged_attention", name, {}};
    for (const AttentionCase& c : cases)
        group.cases.push_back({describe(c), [c](ParityRun& r) { run_attention(r, c); }});
    return group;
}

// A mixed batch: a prompt from scratch, a chunk after a cached prefix, two decode rows, padding tokens.
const std::vector<std::pair<int64_t, int64_t>> kMixedBatch = {{0, 7}, {19, 5}, {40, 1}, {3, 1}};

// Sequences longer than a split-KV partition (512 keys; kernels/cuda/paged_attention.h): decode rows alone and in a
// batch of many, a chunk over a long cached prefix beside decode rows, at block sizes 1, 16 and 128. The CPU's error
// grows with the keys (its sum of exponentials is sequential in fp32): these cases set the op's bound.
std::vector<AttentionCase> long_sequence_cases() {
    std::vector<std::pair<int64_t, int64_t>> many_decodes;
    for (int64_t i = 0; i < 24; ++i) many_decodes.push_back({(i * 379) % 1300 + (i % 3 == 0 ? 1024 : 0), 1});
    std::vector<AttentionCase> cases = {
        {.name = "decode_one", .heads = 8, .kv_heads = 2, .seqs = {{1500, 1}}},
        {.name = "decode_one", .heads = 4, .kv_heads = 4, .head_dim = 128, .block_size = 128, .seqs = {{2100, 1}}},
        {.name = "decode_many", .head_dim = 32, .seqs = many_decodes, .padding_tokens = 3},
        {.name = "chunk_and_decodes", .block_size = 1, .seqs = {{1100, 9}, {1030, 1}, {7, 1}}},
        {.name = "chunk_and_decodes",
         .heads = 8,
         .kv_heads = 1,
         .head_dim = 80,
         .block_size = 128,
         .seqs = {{0, 20}, {1600, 1}, {600, 3}}},
        {.name = "window", .seqs = {{1400, 2}, {2000, 1}}, .sliding_window = 700},
    };
    for (AttentionCase& c : cases) c.q_range = 6;
    return cases;
}

std::vector<CaseGroup> paged_attention_groups() {
    std::vector<AttentionCase> head_dims, small_head_dims, gqa, window, softcap;
    for (int64_t d : {64, 80, 96, 128, 256})
        head_dims.push_back({.name = "mixed", .head_dim = d, .seqs = kMixedBatch, .padding_tokens = 2});
    // CUDA: K/V tiles and query rows just under 48 KiB of shared memory, over it with the kernel's static shared
    // memory (a prefill CTA of 8 rows at head_dim 169, a decode CTA of 2 rows at 184): they need the opt-in too.
    head_dims.push_back({.name = "smem_edge", .head_dim = 169, .seqs = kMixedBatch});
    head_dims.push_back({.name = "smem_edge_decode", .head_dim = 184, .seqs = {{50, 1}, {7, 1}}});
    // The tiny test models' head dims (and an odd one).
    for (int64_t d : {8, 16, 24, 32, 33})
        small_head_dims.push_back({.name = "mixed", .head_dim = d, .seqs = kMixedBatch, .padding_tokens = 1});
    // Groups of 3 and 5 (CUDA: CTAs of 2 tokens x 3 heads, 1 x 5), 12 (a CTA of 8 heads and one of 4 of the group's
    // 12) and 16 (two chunks of 8).
    for (auto [heads, kv_heads] :
         {std::pair<int64_t, int64_t>{4, 4}, {8, 2}, {8, 1}, {6, 3}, {9, 3}, {10, 2}, {12, 1}, {32, 2}})
        gqa.push_back(
            {.name = "gqa", .heads = heads, .kv_heads = kv_heads, .block_size = 8, .seqs = {{0, 20}, {33, 1}}});
    for (int w : {1, 4, 16, 1000})
        window.push_back(
            {.name = fmt::format("window{}", w), .seqs = {{30, 10}, {0, 12}, {60, 1}}, .sliding_window = w});
    // Windows starting mid-tile (CUDA stages 32-key tiles from a multiple of 32) past unmapped blocks; the second
    // crosses a 512-key split-KV partition.
    window.push_back(
        {.name = "window50", .seqs = {{100, 3}, {0, 12}, {300, 1}}, .sliding_window = 50, .unmap_before_window = true});
    window.push_back({.name = "window70",
                      .block_size = 8,
                      .seqs = {{560, 2}, {1100, 1}},
                      .sliding_window = 70,
                      .unmap_before_window = true});
    for (float cap : {50.0f, 2.0f})
        softcap.push_back(
            {.name = fmt::format("softcap{}", int(cap)), .seqs = kMixedBatch, .softcap = cap, .q_range = 8});
    return {
        attention_group("head_dims", head_dims),
        attention_group("small_head_dims", small_head_dims),
        attention_group("long_sequences", long_sequence_cases()),
        attention_group("f32_cache",
                        {{.name = "mixed", .heads = 8, .seqs = kMixedBatch, .f32_cache = true},
                         {.name = "long", .head_dim = 128, .seqs = {{1200, 1}, {0, 6}}, .f32_cache = true}}),
        attention_group("gqa", gqa),
        attention_group("decode", {{.name = "decode",
                                    .heads = 8,
                                    .head_dim = 128,
                                    .seqs = {{50, 1}, {0, 1}, {15, 1}, {16, 1}, {31, 1}, {100, 1}}}}),
        attention_group("chunks", {{.name = "chunks", .seqs = {{16, 16}, {5, 27}, {100, 3}}},
                                   {.name = "chunks", .block_size = 32, .seqs = {{32, 1}, {33, 40}}}}),
        // Sequences without new tokens in the step (equal query_start entries, leading, inside and trailing): a
        // token's sequence is the last s with query_start[s] <= t.
        attention_group("empty_sequences",
                        {{.name = "empty", .seqs = {{5, 3}, {10, 0}, {0, 2}, {7, 0}}, .padding_tokens = 2},
                         {.name = "empty_first", .block_size = 8, .seqs = {{4, 0}, {0, 0}, {9, 4}, {20, 1}}}}),
        attention_group("block_sizes_and_padding",
                        {{.name = "tiny_blocks", .block_size = 1, .seqs = {{3, 4}, {0, 2}}, .padding_tokens = 3},
                         {.name = "all_padding_but_one", .block_size = 8, .seqs = {{9, 1}}, .padding_tokens = 7}}),
        attention_group("sliding_window", window),
        attention_group("softcap", softcap),
        attention_group("alibi", {{.name = "alibi", .seqs = {{0, 9}, {20, 4}, {64, 1}}, .alibi = Alibi::kSlopes}}),
        // Key positions past 256 round in bfloat16; 16 heads give slopes 2^(-h/2), half of them not powers of two.
        attention_group(
            "alibi_falcon",
            {{.name = "falcon", .heads = 16, .kv_heads = 4, .seqs = {{280, 3}, {0, 5}}, .alibi = Alibi::kFalcon}}),
    };
}

}  // namespace

std::vector<CaseGroup> attention_case_groups() {
    std::vector<CaseGroup> groups = {rotary_group("neox", true),  rotary_group("interleaved", false),
                                     write_kv_cache_group(false), write_kv_cache_group(true),
                                     rotary_write_kv_group(true), rotary_write_kv_group(false)};
    for (CaseGroup& g : paged_attention_groups()) groups.push_back(std::move(g));
    return groups;
}

}  // namespace taco::parity
