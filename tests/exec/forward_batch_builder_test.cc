// ForwardBatchBuilder: the packed, padded batch arrays (slot -1 for padding, block tables [S, max_blocks]),
// LongRoPE's per-token table offsets from each sequence's whole length, the same addresses for the same shape, and
// what a build writes (the arrays and a rectangle of the table) and clears (what the build before wrote).
#include "exec/forward_batch_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace taco {
namespace {

BatchLimits limits() {
    BatchLimits l;
    l.max_num_tokens = 32;
    l.max_num_sequences = 4;
    l.max_num_logits = 32;
    l.max_blocks_per_seq = 4;
    return l;
}

std::vector<int32_t> at(const TensorView& v) {
    return std::vector<int32_t>(v.as<int32_t>(), v.as<int32_t>() + v.numel());
}

TEST(ForwardBatchBuilder, PacksSequencesPadsAndMapsSlots) {
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const std::vector<int32_t> a = {5, 6, 7, 8, 9, 10};  // 4 cached, 2 new
    const std::vector<int32_t> b = {1, 2, 3};            // prefill of 3, prompt logits for the first 2
    const std::vector<int32_t> table_a = {3, 1}, table_b = {2};
    RunnerSequence sa{a, 4, 2, table_a, true};
    RunnerSequence sb{b, 0, 3, table_b, true};
    sb.num_prompt_logits = 2;
    const RunnerSequence seqs[] = {sa, sb};
    const ForwardBatch& batch = builder.build(seqs, 8);
    EXPECT_EQ(batch.num_tokens, 8);
    EXPECT_EQ(batch.num_sequences, 2);
    EXPECT_EQ(at(batch.token_ids), (std::vector<int32_t>{9, 10, 1, 2, 3, 0, 0, 0}));
    EXPECT_EQ(at(batch.attention.positions), (std::vector<int32_t>{4, 5, 0, 1, 2, 0, 0, 0}));
    const int64_t* slots = batch.slot_mapping.as<int64_t>();
    EXPECT_EQ(std::vector<int64_t>(slots, slots + 8), (std::vector<int64_t>{4, 5, 8, 9, 10, -1, -1, -1}));
    EXPECT_EQ(at(batch.attention.query_start), (std::vector<int32_t>{0, 2, 5}));
    EXPECT_EQ(at(batch.attention.seq_lens), (std::vector<int32_t>{6, 3}));
    EXPECT_EQ(batch.attention.block_tables.shape_string(), "[2, 4]");
    EXPECT_EQ(at(batch.attention.block_tables), (std::vector<int32_t>{3, 1, 0, 0, 2, 0, 0, 0}));
    EXPECT_EQ(at(batch.logits_indices), (std::vector<int32_t>{1, 2, 3, 4}));
    EXPECT_EQ(batch.attention.max_query_len, 3);
    EXPECT_EQ(batch.attention.max_seq_len, 6);
    EXPECT_EQ(at(batch.rotary_offsets), std::vector<int32_t>(8, 0));
}

TEST(ForwardBatchBuilder, ADecodeBucketHasTheBucketsShapeWithEmptyPaddingSequences) {
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const std::vector<int32_t> a = {5, 6, 7, 8, 9}, b = {1, 2};
    const std::vector<int32_t> table_a = {3, 1}, table_b = {2};
    const RunnerSequence seqs[] = {{a, 4, 1, table_a, true}, {b, 1, 1, table_b, true}};
    const ForwardBatch& batch = builder.build_decode_bucket(seqs, 4);
    EXPECT_EQ(batch.num_tokens, 4);
    EXPECT_EQ(batch.num_sequences, 4);
    EXPECT_EQ(batch.num_logits(), 4);
    EXPECT_EQ(at(batch.token_ids), (std::vector<int32_t>{9, 2, 0, 0}));
    EXPECT_EQ(at(batch.attention.positions), (std::vector<int32_t>{4, 1, 0, 0}));
    const int64_t* slots = batch.slot_mapping.as<int64_t>();
    EXPECT_EQ(std::vector<int64_t>(slots, slots + 4), (std::vector<int64_t>{4, 9, -1, -1}));
    // The padding sequences own no tokens and have length 0; their logits rows are padding rows.
    EXPECT_EQ(at(batch.attention.query_start), (std::vector<int32_t>{0, 1, 2, 2, 2}));
    EXPECT_EQ(at(batch.attention.seq_lens), (std::vector<int32_t>{5, 2, 0, 0}));
    EXPECT_EQ(at(batch.logits_indices), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(at(batch.attention.block_tables), (std::vector<int32_t>{3, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    // Launch shapes from the bucket alone: one query row, the longest sequence the tables allow.
    EXPECT_EQ(batch.attention.max_query_len, 1);
    EXPECT_EQ(batch.attention.max_seq_len, 16);
    // The same bucket has the same arrays whatever the number of sequences (one copy of the same size).
    const size_t bytes = builder.written().arrays_bytes;
    builder.build_decode_bucket(std::span<const RunnerSequence>(seqs, 1), 4);
    EXPECT_EQ(builder.written().arrays_bytes, bytes);
    builder.build_decode_bucket({}, 4);  // all padding (graph capture)
    EXPECT_EQ(builder.written().arrays_bytes, bytes);
    EXPECT_EQ(builder.written().table_rows, 0);
    EXPECT_EQ(at(builder.build_decode_bucket({}, 4).attention.query_start), (std::vector<int32_t>(5, 0)));
}

// Death messages are matched as substrings, not as gtest's POSIX regexes: libonig (linked through the tokenizer)
// exports regcomp/regexec of its own, and under ASan, whose interceptors bind regcomp to libonig's and regexec to
// glibc's, a regex match hangs on a lock word that libonig's regex_t never set.
TEST(ForwardBatchBuilderDeathTest, ADecodeBucketTakesOnlyOneTokenWithLogitsPerSequence) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const std::vector<int32_t> a = {5, 6, 7}, table = {0};
    const RunnerSequence two_new[] = {{a, 1, 2, table, true}};
    EXPECT_DEATH(builder.build_decode_bucket(two_new, 2), ::testing::HasSubstr("one new token with its logits"));
    const RunnerSequence no_logits[] = {{a, 2, 1, table, false}};
    EXPECT_DEATH(builder.build_decode_bucket(no_logits, 2), ::testing::HasSubstr("one new token with its logits"));
    const RunnerSequence three[] = {{a, 2, 1, table, true}, {a, 2, 1, table, true}, {a, 2, 1, table, true}};
    EXPECT_DEATH(builder.build_decode_bucket(three, 2),
                 ::testing::HasSubstr("decode bucket of 2 rows for 3 sequences"));
}

TEST(ForwardBatchBuilder, SameShapeGetsSameAddressesAndWrittenSaysWhatTheBuildWrote) {
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const std::vector<int32_t> x = {1, 2, 3}, y = {7, 8, 9}, table = {0}, long_table = {5, 6, 7};
    const RunnerSequence first[] = {{x, 0, 3, table, true}};
    const RunnerSequence second[] = {{y, 0, 3, table, true}, {x, 0, 3, long_table, true}};
    const ForwardBatch a = builder.build(first);
    const ForwardBatch a_again = builder.build(first);
    EXPECT_EQ(a.token_ids.data, a_again.token_ids.data);
    const ForwardBatch b = builder.build(second);
    // The block table first, at the buffer's start whatever the shape; the arrays after its area, in one range.
    const auto* base = static_cast<const uint8_t*>(builder.buffer().data);
    EXPECT_EQ(a.attention.block_tables.data, b.attention.block_tables.data);
    EXPECT_EQ(static_cast<const uint8_t*>(b.attention.block_tables.data), base);
    const ForwardBatchBuilder::Written& w = builder.written();
    EXPECT_EQ(w.table_rows, 2);
    EXPECT_EQ(w.table_cols, 3);
    EXPECT_EQ(static_cast<const uint8_t*>(b.token_ids.data), base + w.arrays_offset);
    const auto* end = static_cast<const uint8_t*>(b.logits_indices.data) + b.logits_indices.nbytes();
    EXPECT_LE(end, base + w.arrays_offset + w.arrays_bytes);
    // Rebased onto another buffer, every array keeps its offset.
    std::vector<uint8_t> device(builder.capacity_bytes());
    const ForwardBatch r = builder.rebased(device.data(), Device::kCpu);
    EXPECT_EQ(static_cast<uint8_t*>(r.slot_mapping.data) - device.data(),
              static_cast<const uint8_t*>(b.slot_mapping.data) - base);
}

// A build clears what the one before wrote, and only that: after any sequence of builds the buffer holds exactly
// what a fresh builder's holds after the last one (zeros everywhere else: unused table entries are 0).
TEST(ForwardBatchBuilder, EachBuildLeavesTheBufferAsAFreshBuilderWould) {
    const std::vector<int32_t> t1 = {1, 2, 3, 4, 5, 6, 7, 8, 9}, t2 = {4, 5};
    const std::vector<int32_t> wide = {9, 8, 7, 6}, narrow = {3}, mid = {1, 2};
    const RunnerSequence big[] = {{t1, 0, 9, wide, true}, {t1, 6, 3, wide, true}, {t2, 0, 2, mid, true}};
    const RunnerSequence small[] = {{t2, 1, 1, narrow, true}};
    const RunnerSequence decode[] = {{t1, 8, 1, wide, true}, {t2, 1, 1, mid, true}};
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const auto bytes = [](const ForwardBatchBuilder& b) {
        const auto* p = static_cast<const uint8_t*>(b.buffer().data);
        return std::vector<uint8_t>(p, p + b.capacity_bytes());
    };
    const auto fresh = [&](auto&& build) {
        ForwardBatchBuilder other(limits(), 4, RotaryLayout{});
        build(other);
        return bytes(other);
    };
    builder.build(big, 16);
    builder.build(small);
    EXPECT_EQ(bytes(builder), fresh([&](ForwardBatchBuilder& b) { b.build(small); }));
    builder.build_decode_bucket(decode, 4);
    EXPECT_EQ(bytes(builder), fresh([&](ForwardBatchBuilder& b) { b.build_decode_bucket(decode, 4); }));
    builder.build_shape(32, 4, 32);
    EXPECT_EQ(bytes(builder), fresh([&](ForwardBatchBuilder& b) { b.build_shape(32, 4, 32); }));
    builder.build(big);
    builder.build(small, 3);
    EXPECT_EQ(bytes(builder), fresh([&](ForwardBatchBuilder& b) { b.build(small, 3); }));
    EXPECT_EQ(builder.written().table_rows, 1);
    EXPECT_EQ(builder.written().table_cols, 1);
}

TEST(ForwardBatchBuilder, LongRopeOffsetsFollowEachSequencesWholeLength) {
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{8, 100});
    const std::vector<int32_t> ids = {1, 2, 3}, table = {0, 1, 2};
    RunnerSequence stays_short{ids, 0, 3, table, true};
    stays_short.max_length = 8;
    RunnerSequence grows{ids, 0, 3, table, true};
    grows.max_length = 9;
    const RunnerSequence seqs[] = {stays_short, grows};
    const ForwardBatch& batch = builder.build(seqs);
    EXPECT_EQ(at(batch.rotary_offsets), (std::vector<int32_t>{0, 0, 0, 100, 100, 100}));
}

TEST(ForwardBatchBuilder, StepsPastTheLimitsOrTheBlockTableAbort) {
    ForwardBatchBuilder builder(limits(), 4, RotaryLayout{});
    const std::vector<int32_t> ids(20, 1), short_table = {0};
    const RunnerSequence too_few_blocks[] = {{ids, 0, 8, short_table, true}};
    EXPECT_DEATH(builder.build(too_few_blocks), ::testing::HasSubstr("needs 2 blocks"));
    const std::vector<int32_t> table = {0, 1, 2, 3};
    const RunnerSequence ok[] = {{ids, 0, 8, table, true}};
    EXPECT_DEATH(builder.build(ok, 33), ::testing::HasSubstr("past the limits"));
}

}  // namespace
}  // namespace taco
