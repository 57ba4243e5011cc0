// KvCacheManager cost at scheduler scale: 256 running requests sharing a few system prompts (block size 16).
//   BM_AdmitAndFinish: one request finishes (free) and a new one is admitted (match_prefix + allocate of its
//     whole prompt + cache_blocks), with 255 others holding their blocks. Prompts: one of 8 system prompts (512
//     tokens) + a user prompt (new, 32-256 tokens; or one of 2000 recurring 128-token ones + 16 new tokens,
//     16000 blocks in all: more than the device tier caches, less than device + host).
//     Counters: hit_rate (prefix tokens found / tokens looked up), host_hit_rate (the part promoted back from
//     the host tier).
//   BM_DecodeStep: one decode step of all 256 requests (allocate one more token + cache_blocks each); requests
//     reaching their length finish and are replaced, so admissions are part of the mix. Per-request cost is
//     the step time / 256.
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "cache/kv_cache_manager.h"

namespace taco {
namespace {

constexpr int kNumRunning = 256;
constexpr int kNumSystemPrompts = 8;
constexpr int kSystemPromptTokens = 512;
constexpr int kBlockSize = 16;

struct Running {
    RequestId id = 0;
    std::vector<int32_t> tokens;
    int64_t num_computed = 0;
    int64_t max_tokens = 0;
};

class Workload {
public:
    // num_user_prompts = 0: every user prompt is new; else users repeat one of that many (128 tokens each).
    Workload(int64_t num_device_blocks, int64_t num_host_blocks, int64_t num_user_prompts)
        : rng_(42), m_(config(num_device_blocks, num_host_blocks)) {
        std::uniform_int_distribution<int32_t> token(0, 32000);
        system_prompts_.resize(kNumSystemPrompts);
        for (auto& p : system_prompts_) {
            p.resize(kSystemPromptTokens);
            for (int32_t& t : p) t = token(rng_);
        }
        user_prompts_.resize(size_t(num_user_prompts));
        for (auto& p : user_prompts_) {
            p.resize(128);
            for (int32_t& t : p) t = token(rng_);
        }
        // Fresh text is a slice of this pool at a random offset: one RNG call per prompt, not one per token.
        token_pool_.resize(size_t(1) << 20);
        for (int32_t& t : token_pool_) t = token(rng_);
        running_.resize(kNumRunning);
        for (Running& r : running_) admit(r);
    }

    // Frees request `i` and admits a new one in its place.
    void replace(size_t i) {
        m_.free(running_[i].id);
        admit(running_[i]);
    }

    void decode_step() {
        for (size_t i = 0; i < running_.size(); ++i) {
            Running& r = running_[i];
            r.tokens.push_back(int32_t(r.tokens.size()));
            if (!m_.allocate(r.id, r.num_computed + 1)) {
                replace(i);
                continue;
            }
            ++r.num_computed;
            m_.cache_blocks(r.id, r.tokens, r.num_computed);
            if (int64_t(r.tokens.size()) >= r.max_tokens) replace(i);
        }
        benchmark::DoNotOptimize(m_.take_pending_copies());
    }

    size_t size() const { return running_.size(); }
    const KvCacheManager& manager() const { return m_; }

private:
    static KvCacheConfig config(int64_t num_device_blocks, int64_t num_host_blocks) {
        KvCacheConfig c;
        c.num_device_blocks = num_device_blocks;
        c.num_host_blocks = num_host_blocks;
        c.block_size = kBlockSize;
        return c;
    }

    void admit(Running& r) {
        std::uniform_int_distribution<int> pick(0, kNumSystemPrompts - 1);
        std::uniform_int_distribution<int> user_len(32, 256);
        r.id = next_id_++;
        if (user_prompts_.empty()) {
            r.tokens = system_prompts_[size_t(pick(rng_))];
            append_fresh(r.tokens, user_len(rng_));
        } else {
            // User u always talks to the same application (system prompt u % 8).
            const size_t u = std::uniform_int_distribution<size_t>(0, user_prompts_.size() - 1)(rng_);
            r.tokens = system_prompts_[u % kNumSystemPrompts];
            r.tokens.insert(r.tokens.end(), user_prompts_[u].begin(), user_prompts_[u].end());
            append_fresh(r.tokens, 16);
        }
        r.max_tokens = int64_t(r.tokens.size()) + 128;
        r.num_computed = m_.match_prefix(r.id, r.tokens);
        if (!m_.allocate(r.id, int64_t(r.tokens.size()))) {
            ++num_admit_failures_;  // the pool is sized so that this does not happen in steady state
            m_.free(r.id);
            r.num_computed = 0;
            return;
        }
        r.num_computed = int64_t(r.tokens.size());
        m_.cache_blocks(r.id, r.tokens, r.num_computed);
        benchmark::DoNotOptimize(m_.take_pending_copies());
    }

    void append_fresh(std::vector<int32_t>& tokens, int n) {
        const size_t at = std::uniform_int_distribution<size_t>(0, token_pool_.size() - size_t(n))(rng_);
        tokens.insert(tokens.end(), token_pool_.begin() + ptrdiff_t(at), token_pool_.begin() + ptrdiff_t(at) + n);
    }

    std::mt19937 rng_;
    KvCacheManager m_;
    std::vector<int32_t> token_pool_;
    std::vector<std::vector<int32_t>> system_prompts_;
    std::vector<std::vector<int32_t>> user_prompts_;
    std::vector<Running> running_;
    RequestId next_id_ = 1;

public:
    int64_t num_admit_failures_ = 0;
};

void report_hits(benchmark::State& state, const KvCacheManager& m) {
    const KvCacheStats s = m.stats();
    const double queries = double(std::max<int64_t>(1, s.prefix_queries_tokens));
    state.counters["hit_rate"] = double(s.prefix_hits_device_tokens + s.prefix_hits_host_tokens) / queries;
    state.counters["host_hit_rate"] = double(s.prefix_hits_host_tokens) / queries;
    state.counters["usage"] = s.usage();
}

// Device pool: 256 requests of up to 512 + 256 + 128 tokens need ~14k blocks unshared; 8 shared system prompts
// take 256 and the rest ~8k, so 10k blocks leave room for caching and force eviction under decode.
void BM_AdmitAndFinish(benchmark::State& state) {
    Workload w(10000, state.range(0), state.range(1));
    size_t i = 0;
    for (auto _ : state) {
        w.replace(i);
        i = (i + 1) % w.size();
    }
    report_hits(state, w.manager());
    state.counters["admit_failures"] = double(w.num_admit_failures_);
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AdmitAndFinish)->ArgsProduct({{0, 16384}, {0, 2000}})->ArgNames({"host_blocks", "user_prompts"});

void BM_DecodeStep(benchmark::State& state) {
    Workload w(10000, state.range(0), state.range(1));
    for (auto _ : state) w.decode_step();
    report_hits(state, w.manager());
    state.counters["admit_failures"] = double(w.num_admit_failures_);
    state.SetItemsProcessed(state.iterations() * kNumRunning);
}
BENCHMARK(BM_DecodeStep)->ArgsProduct({{0, 16384}, {0, 2000}})->ArgNames({"host_blocks", "user_prompts"});

}  // namespace
}  // namespace taco

BENCHMARK_MAIN();
