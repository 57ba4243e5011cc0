// One loaded Tokenizer serves several threads at once (the server shares it between request workers).
#include <thread>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace taco {
namespace {

TEST(TokenizerThreads, ConcurrentEncodeAndDecodeGiveSingleThreadResults) {
    ASSERT_TRUE(test::require_tokenizer_cache());
    auto lines = test::read_corpus(test::source_path("tests/data/tokenizer/corpus.jsonl"));
    for (const char* name : {"llama3", "llama2"}) {
        auto tok = Tokenizer::load(test::tokenizer_dir(name));
        ASSERT_TRUE(tok.is_ok()) << tok.status().message();
        std::vector<std::vector<int32_t>> expected;
        for (const auto& line : lines) expected.push_back(*(*tok)->encode(line));
        std::vector<int> mismatches(4, 0);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                for (int round = 0; round < 3; ++round) {
                    for (size_t i = (static_cast<size_t>(t) * 7) % lines.size(), n = 0; n < lines.size();
                         ++n, i = (i + 1) % lines.size()) {
                        auto ids = (*tok)->encode(lines[i]);
                        if (!ids.is_ok() || *ids != expected[i]) ++mismatches[t];
                        if ((*tok)->decode(expected[i]) != (*tok)->decode(expected[i])) ++mismatches[t];
                    }
                }
            });
        }
        for (auto& th : threads) th.join();
        for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << name << " thread " << t;
    }
}

}  // namespace
}  // namespace taco
