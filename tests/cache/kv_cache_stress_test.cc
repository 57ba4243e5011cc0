// Randomized workloads on tiny pools, driven the way the scheduler drives KvCacheManager: admissions
// (match_prefix + allocate), steps (allocate for every running request, then the step's copies, then the forward
// pass, then cache_blocks), decode, fork (n > 1), preemption, abort, prefix-cache resets. After every call the
// manager's invariants are checked, and before every forward pass each request's KV (simulated by KvSim) must
// hold exactly the payloads of its own prefix: this catches a missing copy, a copy run in the wrong order, a
// block written while shared, and any false prefix hit.
#include <algorithm>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cache/kv_cache_manager.h"
#include "kv_sim.h"

namespace taco {
namespace {

using testing::KvSim;

struct SimRequest {
    RequestId id = 0;
    std::vector<int32_t> tokens;
    uint64_t salt = 0;
    int64_t num_computed = 0;
    bool running = false;
};

class Workload {
public:
    Workload(uint32_t seed, const KvCacheConfig& config)
        : rng_(seed),
          config_(config),
          m_(config),
          sim_(config.num_device_blocks, config.num_host_blocks, config.block_size) {
        // A few shared "system prompts" so that requests overlap.
        for (int i = 0; i < 3; ++i) {
            std::vector<int32_t> p(size_t(uniform(1, 6) * config.block_size));
            for (int32_t& t : p) t = int32_t(uniform(0, 3));
            prompts_.push_back(p);
        }
    }

    void run(int num_ops) {
        for (int op = 0; op < num_ops; ++op) {
            const int64_t kind = uniform(0, 99);
            if (kind < 25)
                add_request();
            else if (kind < 80)
                step();
            else if (kind < 88)
                fork_one();
            else if (kind < 96)
                abort_one();
            else
                maybe_reset();
            check();
            if (::testing::Test::HasFailure()) return;  // later ops would only cascade from the first failure
        }
        // Drain: everything freed and the cache reset gives every block back, in both tiers.
        for (SimRequest& r : requests_) m_.free(r.id);
        requests_.clear();
        m_.check_invariants();
        EXPECT_EQ(m_.stats().num_used_device_blocks, 0);
        m_.reset_prefix_cache();
        m_.check_invariants();
        EXPECT_EQ(m_.num_available_blocks(), config_.num_device_blocks);
        const KvCacheStats s = m_.stats();
        EXPECT_EQ(s.num_cached_device_blocks, 0);
        EXPECT_EQ(s.num_cached_host_blocks, 0);
        for (BlockId b = 0; b < BlockId(config_.num_host_blocks); ++b) EXPECT_EQ(m_.ref_count(Tier::kHost, b), 0);
        for (BlockId b = 0; b < BlockId(config_.num_device_blocks); ++b) EXPECT_EQ(m_.ref_count(Tier::kDevice, b), 0);
    }

    int64_t num_steps() const { return num_steps_; }
    KvCacheStats stats() const { return m_.stats(); }

private:
    int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

    void check() {
        m_.check_invariants();
        const double usage = m_.stats().usage();
        ASSERT_GE(usage, 0.0);
        ASSERT_LE(usage, 1.0);
    }

    void add_request() {
        if (requests_.size() >= 12) return;
        SimRequest r;
        r.id = next_id_++;
        const std::vector<int32_t>& p = prompts_[size_t(uniform(0, int64_t(prompts_.size()) - 1))];
        r.tokens.assign(p.begin(), p.begin() + uniform(0, int64_t(p.size())));
        const int64_t suffix = uniform(r.tokens.empty() ? 1 : 0, 2 * config_.block_size);
        for (int64_t i = 0; i < suffix; ++i) r.tokens.push_back(int32_t(uniform(0, 3)));
        r.salt = uint64_t(uniform(0, 4) == 0);
        requests_.push_back(std::move(r));
    }

    // One scheduler step over a random subset of requests: waiting ones are admitted, running ones advance.
    void step() {
        ++num_steps_;
        struct Scheduled {
            size_t index;
            int64_t num_new;
        };
        std::vector<Scheduled> scheduled;
        for (size_t i = 0; i < requests_.size(); ++i) {
            if (uniform(0, 2) == 0) continue;
            SimRequest& r = requests_[i];
            if (!r.running) {
                const int64_t matched = m_.match_prefix(r.id, r.tokens, r.salt);
                check();
                ASSERT_EQ(matched % config_.block_size, 0);
                ASSERT_LT(matched, std::max<int64_t>(1, int64_t(r.tokens.size())));
                if (!config_.enable_prefix_caching) {
                    ASSERT_EQ(matched, 0);
                }
                r.num_computed = matched;
                r.running = true;
            }
            const int64_t remaining = int64_t(r.tokens.size()) - r.num_computed;
            ASSERT_GT(remaining, 0);
            const int64_t num_new = uniform(1, std::min<int64_t>(remaining, 3 * config_.block_size));
            if (!allocate_or_preempt(r, num_new)) continue;
            scheduled.push_back({i, num_new});
        }
        sim_.apply(m_.take_pending_copies());
        for (const Scheduled& s : scheduled) {
            SimRequest& r = requests_[s.index];
            const std::vector<BlockId>& table = m_.block_table(r.id);
            ASSERT_EQ(sim_.num_correct(table, r.tokens, r.num_computed, r.salt), r.num_computed)
                << "request " << r.id << " lost its KV";
            sim_.write(table, r.tokens, r.num_computed, r.num_computed + s.num_new, r.salt);
        }
        for (const Scheduled& s : scheduled) {
            SimRequest& r = requests_[s.index];
            r.num_computed += s.num_new;
            m_.cache_blocks(r.id, r.tokens, r.num_computed, r.salt);
            check();
            // A sampled token, or the end of the request.
            if (r.num_computed == int64_t(r.tokens.size())) {
                if (r.tokens.size() > size_t(10 * config_.block_size) || uniform(0, 9) == 0)
                    r.tokens.clear();
                else
                    r.tokens.push_back(int32_t(uniform(0, 3)));
            }
        }
        for (size_t i = requests_.size(); i-- > 0;) {
            if (requests_[i].tokens.empty()) {
                m_.free(requests_[i].id);
                requests_.erase(requests_.begin() + ptrdiff_t(i));
            }
        }
    }

    // allocate; on failure checks that nothing changed, then preempts (recompute) as the scheduler does.
    bool allocate_or_preempt(SimRequest& r, int64_t num_new) {
        const std::vector<BlockId> table = m_.block_table(r.id);
        const int64_t available = m_.num_available_blocks();
        const int64_t needed = m_.num_blocks_needed(r.id, r.num_computed + num_new);
        const KvCacheStats before = m_.stats();
        const bool ok = m_.allocate(r.id, r.num_computed + num_new);
        check();
        EXPECT_EQ(ok, needed <= available);
        if (ok) {
            EXPECT_EQ(int64_t(m_.block_table(r.id).size()),
                      (r.num_computed + num_new + config_.block_size - 1) / config_.block_size);
            return true;
        }
        EXPECT_EQ(m_.block_table(r.id), table);
        EXPECT_EQ(m_.num_available_blocks(), available);
        EXPECT_EQ(m_.stats().num_cached_device_blocks, before.num_cached_device_blocks);
        EXPECT_EQ(m_.stats().num_demotions, before.num_demotions);
        m_.free(r.id);
        r.running = false;
        r.num_computed = 0;
        return false;
    }

    void fork_one() {
        if (requests_.empty() || requests_.size() >= 12) return;
        SimRequest& parent = requests_[size_t(uniform(0, int64_t(requests_.size()) - 1))];
        if (!parent.running) return;
        SimRequest child = parent;
        child.id = next_id_++;
        m_.fork(parent.id, child.id);
        // Parallel samples diverge from here (the last token is never computed yet).
        child.tokens.back() = int32_t(uniform(0, 3));
        requests_.push_back(std::move(child));
    }

    void abort_one() {
        if (requests_.empty()) return;
        const size_t i = size_t(uniform(0, int64_t(requests_.size()) - 1));
        m_.free(requests_[i].id);
        requests_.erase(requests_.begin() + ptrdiff_t(i));
    }

    void maybe_reset() {
        for (SimRequest& r : requests_) {
            if (r.running) return;
        }
        // Nobody holds blocks: waiting requests are not known to the manager.
        m_.reset_prefix_cache();
    }

    std::mt19937 rng_;
    KvCacheConfig config_;
    KvCacheManager m_;
    KvSim sim_;
    std::vector<std::vector<int32_t>> prompts_;
    std::vector<SimRequest> requests_;
    RequestId next_id_ = 1;
    int64_t num_steps_ = 0;
};

KvCacheConfig random_config(uint32_t seed) {
    std::mt19937 rng(seed * 7919u + 1);
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    KvCacheConfig c;
    c.block_size = int64_t{1} << pick(0, 2);
    c.num_device_blocks = pick(4, 24);
    c.num_host_blocks = pick(0, 2) == 0 ? 0 : pick(1, 16);
    c.enable_prefix_caching = pick(0, 5) != 0;
    return c;
}

TEST(KvCacheStress, RandomWorkloadsKeepInvariantsAndKvContents) {
    int64_t total_steps = 0;
    int64_t promotions = 0, demotions = 0, cow = 0, hits = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed);
        Workload w(seed, random_config(seed));
        w.run(1500);
        if (::testing::Test::HasFailure()) return;
        total_steps += w.num_steps();
        promotions += w.stats().num_promotions;
        demotions += w.stats().num_demotions;
        cow += w.stats().num_cow_copies;
        hits += w.stats().prefix_hits_device_tokens + w.stats().prefix_hits_host_tokens;
    }
    // The workload must actually exercise every path it claims to test.
    EXPECT_GT(total_steps, 10000);
    EXPECT_GT(promotions, 0);
    EXPECT_GT(demotions, 0);
    EXPECT_GT(cow, 0);
    EXPECT_GT(hits, 0);
}

TEST(KvCacheStress, HostTierRoundTripRestoresKvOnAPoolThatAlwaysEvicts) {
    // Three blocks on the device, plenty on the host: almost every cached block goes through the host and back.
    KvCacheConfig c;
    c.block_size = 2;
    c.num_device_blocks = 6;
    c.num_host_blocks = 32;
    for (uint32_t seed = 100; seed < 110; ++seed) {
        SCOPED_TRACE(::testing::Message() << "seed " << seed);
        Workload w(seed, c);
        w.run(2000);
        if (::testing::Test::HasFailure()) return;
        EXPECT_GT(w.stats().num_promotions, 0);
    }
}

}  // namespace
}  // namespace taco
