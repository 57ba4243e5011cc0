#include "cache/child_index.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace taco {
namespace {

TEST(ChildIndex, MatchesAReferenceMapUnderRandomInsertsAndErases) {
    ChildIndex index;
    std::map<std::pair<int32_t, uint64_t>, int32_t> reference;
    std::mt19937 rng(3);
    for (int op = 0; op < 200000; ++op) {
        // Few distinct keys and parents: long probe runs, many erase shifts.
        const int32_t parent = int32_t(rng() % 37);
        const uint64_t key = rng() % 3 == 0 ? uint64_t(rng() % 5) : uint64_t(rng() % 4000);
        auto it = reference.find({parent, key});
        if (rng() % 2 == 0 && it == reference.end()) {
            const int32_t child = int32_t(op);
            index.insert(parent, key, child);
            reference[{parent, key}] = child;
        } else if (it != reference.end()) {
            index.erase(parent, key);
            reference.erase(it);
        }
        ASSERT_EQ(index.size(), reference.size());
        if (op % 1000 == 0) {
            for (const auto& [k, child] : reference) ASSERT_EQ(index.find(k.first, k.second), child);
        }
        const auto probe = std::make_pair(int32_t(rng() % 37), uint64_t(rng() % 4000));
        auto pit = reference.find(probe);
        ASSERT_EQ(index.find(probe.first, probe.second), pit == reference.end() ? ChildIndex::kNone : pit->second);
    }
}

TEST(ChildIndexDeathTest, DuplicateInsertAndMissingEraseAbort) {
    ChildIndex index;
    index.insert(1, 2, 3);
    EXPECT_DEATH(index.insert(1, 2, 4), "");
    EXPECT_DEATH(index.erase(1, 3), "");
}

}  // namespace
}  // namespace taco
