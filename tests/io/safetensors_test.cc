#include "io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scratch_dir_test.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

struct TensorSpec {
    std::string name;
    std::string dtype;
    json shape;
    std::string bytes;
};

// The 8-byte little-endian length, the header text, then the data: lets a test write any header it likes.
std::string raw_safetensors(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
    return out + header + data;
}

// A well-formed file: tensors laid out back to back in the given order, header padded to 8 bytes as
// the Python writer does.
std::string build_safetensors(const std::vector<TensorSpec>& tensors, const json& metadata = nullptr) {
    json header = json::object();
    std::string data;
    for (const TensorSpec& t : tensors) {
        header[t.name] = {
            {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
        data += t.bytes;
    }
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    return raw_safetensors(text, data);
}

std::string bytes_of(size_t n, uint8_t first = 1) {
    std::string out(n, '\0');
    for (size_t i = 0; i < n; ++i) out[i] = char(uint8_t(first + i));
    return out;
}

class SafetensorsTest : public testing_util::ScratchDirTest {
protected:
    // Opens a file holding `bytes`, expecting an error whose message contains every one of `parts`.
    void expect_open_error(const std::string& bytes, std::initializer_list<std::string> parts) {
        std::string path = write("bad.safetensors", bytes);
        auto file = SafetensorsFile::open(path);
        ASSERT_FALSE(file.is_ok());
        EXPECT_THAT(file.status().message(), HasSubstr(path));
        for (const std::string& part : parts) EXPECT_THAT(file.status().message(), HasSubstr(part));
    }
    // One tensor "t" whose header entry is `entry`, followed by `data_bytes` bytes.
    void expect_entry_error(const json& entry, size_t data_bytes, std::initializer_list<std::string> parts) {
        SCOPED_TRACE(entry.dump());
        expect_open_error(raw_safetensors(json{{"t", entry}}.dump(), bytes_of(data_bytes)), parts);
    }
};

TEST_F(SafetensorsTest, SafetensorsFile_RoundTripsEveryDtype) {
    struct Case {
        std::string name;
        DType dtype;
        size_t elem;
    };
    std::vector<Case> cases = {{"F32", DType::kF32, 4}, {"F16", DType::kF16, 2},        {"BF16", DType::kBF16, 2},
                               {"I8", DType::kI8, 1},   {"U8", DType::kU8, 1},          {"I32", DType::kI32, 4},
                               {"I64", DType::kI64, 8}, {"F8_E4M3", DType::kF8E4M3, 1}, {"F8_E5M2", DType::kF8E5M2, 1}};
    std::vector<TensorSpec> specs;
    uint8_t first = 0;
    for (const Case& c : cases) {
        specs.push_back({"w." + c.name, c.name, {2, 3}, bytes_of(6 * c.elem, first)});
        first = uint8_t(first + 37);
    }
    std::string path = write("all.safetensors", build_safetensors(specs));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_EQ((*file)->entries().size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        auto view = (*file)->view(specs[i].name);
        ASSERT_TRUE(view.is_ok()) << view.status().message();
        EXPECT_EQ(view->dtype, cases[i].dtype) << specs[i].name;
        EXPECT_EQ(view->ndim, 2);
        EXPECT_EQ(view->shape[0], 2);
        EXPECT_EQ(view->shape[1], 3);
        EXPECT_EQ(view->strides[0], 3);
        EXPECT_EQ(view->strides[1], 1);
        ASSERT_EQ(view->nbytes(), specs[i].bytes.size());
        EXPECT_EQ(std::memcmp(view->data, specs[i].bytes.data(), view->nbytes()), 0) << specs[i].name;
    }
}

TEST_F(SafetensorsTest, SafetensorsFile_AcceptsZeroSizedTensors) {
    // Empty data section: nothing but zero-sized tensors.
    std::string only_empty = write("empty.safetensors", build_safetensors({{"e", "F32", {0, 4}, ""}}));
    auto file = SafetensorsFile::open(only_empty);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto view = (*file)->view("e");
    ASSERT_TRUE(view.is_ok()) << view.status().message();
    EXPECT_EQ(view->ndim, 2);
    EXPECT_EQ(view->numel(), 0);

    // A zero-sized tensor placed at the same offset as a real one does not count as an overlap.
    std::string header = json{{"a", {{"dtype", "U8"}, {"shape", {4}}, {"data_offsets", {0, 4}}}},
                              {"z", {{"dtype", "F16"}, {"shape", {3, 0}}, {"data_offsets", {2, 2}}}}}
                             .dump();
    std::string mixed = write("mixed.safetensors", raw_safetensors(header, bytes_of(4)));
    auto mixed_file = SafetensorsFile::open(mixed);
    ASSERT_TRUE(mixed_file.is_ok()) << mixed_file.status().message();
    EXPECT_EQ((*mixed_file)->view("z")->numel(), 0);

    // No tensors at all and no data.
    std::string bare = write("bare.safetensors", raw_safetensors("{}", ""));
    auto bare_file = SafetensorsFile::open(bare);
    ASSERT_TRUE(bare_file.is_ok()) << bare_file.status().message();
    EXPECT_TRUE((*bare_file)->entries().empty());
}

TEST_F(SafetensorsTest, SafetensorsFile_ReadsMetadata) {
    std::string path = write(
        "m.safetensors", build_safetensors({{"w", "F32", {1}, bytes_of(4)}}, json{{"format", "pt"}, {"note", "x"}}));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    std::map<std::string, std::string> expected = {{"format", "pt"}, {"note", "x"}};
    EXPECT_EQ((*file)->metadata(), expected);
    EXPECT_EQ((*file)->entries().count("__metadata__"), 0u);
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsMetadataThatIsNotAStringMap) {
    expect_open_error(raw_safetensors(json{{"__metadata__", {{"format", 3}}}}.dump(), ""), {"__metadata__", "format"});
    expect_open_error(raw_safetensors(json{{"__metadata__", json::array()}}.dump(), ""), {"__metadata__"});
}

TEST_F(SafetensorsTest, SafetensorsFile_ScalarHasZeroDims) {
    std::string path = write("s.safetensors", build_safetensors({{"s", "I64", json::array(), bytes_of(8)}}));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto view = (*file)->view("s");
    ASSERT_TRUE(view.is_ok()) << view.status().message();
    EXPECT_EQ(view->ndim, 0);
    EXPECT_EQ(view->numel(), 1);
}

TEST_F(SafetensorsTest, SafetensorsFile_ViewRejectsMoreThanFourDims) {
    std::string path = write("d.safetensors", build_safetensors({{"five", "U8", {1, 2, 1, 2, 1}, bytes_of(4)},
                                                                 {"four", "U8", {1, 2, 1, 2}, bytes_of(4)}}));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_TRUE((*file)->view("four").is_ok());
    auto view = (*file)->view("five");
    ASSERT_FALSE(view.is_ok());
    EXPECT_THAT(view.status().message(), HasSubstr("'five'"));
    EXPECT_THAT(view.status().message(), HasSubstr(path));
}

TEST_F(SafetensorsTest, SafetensorsFile_ViewOfAbsentTensorIsError) {
    std::string path = write("a.safetensors", build_safetensors({{"w", "U8", {1}, bytes_of(1)}}));
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok());
    EXPECT_EQ((*file)->find("nope"), nullptr);
    auto view = (*file)->view("nope");
    ASSERT_FALSE(view.is_ok());
    EXPECT_THAT(view.status().message(), HasSubstr("'nope'"));
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsMissingFile) {
    std::string path = (dir_ / "absent.safetensors").string();
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.is_ok());
    EXPECT_THAT(file.status().message(), HasSubstr(path));
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsFileShorterThanHeaderLength) {
    for (size_t n = 0; n < 8; ++n) expect_open_error(std::string(n, '\0'), {"8-byte"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsHeaderLengthPastEnd) {
    std::string bytes = raw_safetensors("{}", "");
    bytes[0] = 3;  // claims 3 header bytes, the file has 2 after the length
    expect_open_error(bytes, {"header length 3 past the end"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsHeaderLengthOverLimit) {
    std::string bytes = raw_safetensors("{}", "");
    bytes[4] = 1;  // 2^32 + 2 bytes
    expect_open_error(bytes, {"header length 4294967298", "limit"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsInvalidJson) {
    expect_open_error(raw_safetensors("{\"t\": {\"dtype\": ", ""), {"not valid JSON"});
    expect_open_error(raw_safetensors(std::string(4, '\0'), ""), {"not valid JSON"});
}

TEST_F(SafetensorsTest, SafetensorsFile_KeepsErrorsShortOnHugeOrDeeplyNestedHeaders) {
    // An unterminated string: the parser's message would quote all of it.
    std::string bytes = raw_safetensors("{\"t\": \"" + std::string(1 << 20, 'x'), "");
    auto unterminated = SafetensorsFile::open(write("long.safetensors", bytes));
    ASSERT_FALSE(unterminated.is_ok());
    EXPECT_LT(unterminated.status().message().size(), 1000u);

    // A shape nested 100k arrays deep is refused at parse time (limits::kMaxJsonDepth), never walked recursively.
    size_t depth = 100000;
    std::string deep = "{\"t\": {\"dtype\": \"U8\", \"shape\": [" + std::string(depth, '[') + std::string(depth, ']') +
                       "], \"data_offsets\": [0, 0]}}";
    auto nested = SafetensorsFile::open(write("deep.safetensors", raw_safetensors(deep, "")));
    ASSERT_FALSE(nested.is_ok());
    EXPECT_THAT(nested.status().message(), HasSubstr("nested deeper than 128 levels"));
    EXPECT_LT(nested.status().message().size(), 1000u);
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsHeaderThatIsNotAnObject) {
    expect_open_error(raw_safetensors("[1, 2]", ""), {"array", "not an object"});
    expect_open_error(raw_safetensors("\"x\"", ""), {"not an object"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsEntryMissingAField) {
    json full = {{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", {0, 2}}};
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
        json entry = full;
        entry.erase(key);
        expect_entry_error(entry, 2, {"tensor 't'", std::string("missing '") + key + "'"});
    }
    expect_entry_error(json::array({1}), 2, {"tensor 't'", "not an object"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsFieldsOfWrongJsonType) {
    expect_entry_error({{"dtype", 5}, {"shape", {2}}, {"data_offsets", {0, 2}}}, 2, {"tensor 't'", "'dtype'"});
    expect_entry_error({{"dtype", "U8"}, {"shape", "2"}, {"data_offsets", {0, 2}}}, 2, {"tensor 't'", "'shape'"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", "0-2"}}, 2, {"tensor 't'", "data_offsets"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", {0}}}, 2, {"tensor 't'", "data_offsets"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", {0, 2, 4}}}, 2, {"data_offsets"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", {-1, 2}}}, 2, {"data_offsets"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2}}, {"data_offsets", {0.0, 2.0}}}, 2, {"data_offsets"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsNegativeOrNonIntegerDims) {
    expect_entry_error({{"dtype", "U8"}, {"shape", {-2}}, {"data_offsets", {0, 2}}}, 2, {"tensor 't'", "negative"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {2.0}}, {"data_offsets", {0, 2}}}, 2, {"tensor 't'", "non-integer"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {"2"}}, {"data_offsets", {0, 2}}}, 2, {"tensor 't'", "non-integer"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsOffsetsEndPastData) {
    std::string header = json{{"model.x.weight", {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 12}}}}}.dump();
    std::string path = write("short.safetensors", raw_safetensors(header, bytes_of(8)));
    auto file = SafetensorsFile::open(path);
    ASSERT_FALSE(file.is_ok());
    EXPECT_EQ(file.status().message(),
              path + ": tensor 'model.x.weight': data_offsets [0, 12) end past the 8 bytes of data");
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsOffsetsBeginPastEnd) {
    expect_entry_error({{"dtype", "U8"}, {"shape", {0}}, {"data_offsets", {4, 2}}}, 8, {"tensor 't'", "[4, 2)"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsOverlappingTensors) {
    std::string header = json{{"a", {{"dtype", "U8"}, {"shape", {4}}, {"data_offsets", {0, 4}}}},
                              {"b", {{"dtype", "U8"}, {"shape", {4}}, {"data_offsets", {3, 7}}}}}
                             .dump();
    expect_open_error(raw_safetensors(header, bytes_of(8)), {"'a'", "'b'", "overlap"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsSizeNotMatchingDtypeTimesShape) {
    expect_entry_error({{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 6}}}, 8,
                       {"tensor 't'", "6 bytes", "needs 8"});
    expect_entry_error({{"dtype", "BF16"}, {"shape", {2, 2}}, {"data_offsets", {0, 4}}}, 8, {"needs 8"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsShapeWhoseElementCountOverflows) {
    // 2^32 * 2^32 elements wraps to 0 in 64 bits, which would "match" an empty byte range.
    expect_entry_error({{"dtype", "U8"}, {"shape", {1ull << 32, 1ull << 32}}, {"data_offsets", {0, 0}}}, 0,
                       {"tensor 't'", "overflows"});
    // 2^62 elements of 4 bytes overflow only in the byte count.
    expect_entry_error({{"dtype", "F32"}, {"shape", {1ull << 62}}, {"data_offsets", {0, 0}}}, 0,
                       {"tensor 't'", "overflows"});
    expect_entry_error({{"dtype", "U8"}, {"shape", {1ull << 63}}, {"data_offsets", {0, 0}}}, 0,
                       {"tensor 't'", "too large"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsUnknownDtypeNamingIt) {
    expect_entry_error({{"dtype", "F64"}, {"shape", {1}}, {"data_offsets", {0, 8}}}, 8,
                       {"tensor 't'", "unknown dtype 'F64'"});
}

TEST_F(SafetensorsTest, SafetensorsFile_RejectsEveryTruncationOfAValidFile) {
    std::string bytes = build_safetensors({{"a", "F32", {2, 2}, bytes_of(16)}, {"b", "I8", {3}, bytes_of(3)}});
    for (size_t n = 0; n < bytes.size(); ++n) {
        std::string path = write("t.safetensors", bytes.substr(0, n));
        EXPECT_FALSE(SafetensorsFile::open(path).is_ok()) << "prefix of " << n << " bytes";
    }
    EXPECT_TRUE(SafetensorsFile::open(write("t.safetensors", bytes)).is_ok());
}

TEST_F(SafetensorsTest, SafetensorsFile_SurvivesSingleByteCorruptionOfTheHeader) {
    std::string good =
        build_safetensors({{"a", "F32", {2, 2}, bytes_of(16)}, {"b", "I8", {3}, bytes_of(3)}}, json{{"format", "pt"}});
    size_t header_end = good.size() - 19;
    int num_opened = 0;
    for (size_t pos = 0; pos < header_end; ++pos) {
        for (char replacement : {'\0', '9', '"', '-', '[', '{', ',', char(0xff)}) {
            std::string bytes = good;
            bytes[pos] = replacement;
            auto file = SafetensorsFile::open(write("c.safetensors", bytes));
            if (!file.is_ok()) continue;
            ++num_opened;
            // Whatever got through must still describe bytes inside the file.
            for (const auto& [name, entry] : (*file)->entries()) {
                auto view = (*file)->view(name);
                ASSERT_TRUE(view.is_ok()) << view.status().message();
                const auto* begin = static_cast<const uint8_t*>(view->data);
                ASSERT_LE(entry.data_end, 19u) << "byte " << pos;
                if (view->nbytes() > 0) {
                    EXPECT_EQ(begin[0], uint8_t(bytes[header_end + entry.data_begin]));
                }
            }
        }
    }
    EXPECT_GT(num_opened, 0);  // some edits (inside metadata strings, say) are harmless
}

// --- Checkpoint ---

std::string index_json(const std::map<std::string, std::string>& weight_map) {
    return json{{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}}.dump(2);
}

TEST_F(SafetensorsTest, Checkpoint_OpensShardedFolderThroughIndex) {
    write("model-00001-of-00002.safetensors",
          build_safetensors({{"a", "F32", {2}, bytes_of(8, 10)}, {"b", "U8", {3}, bytes_of(3, 50)}}));
    write("model-00002-of-00002.safetensors", build_safetensors({{"c", "BF16", {1, 2}, bytes_of(4, 90)}}));
    write("model.safetensors.index.json", index_json({{"a", "model-00001-of-00002.safetensors"},
                                                      {"b", "model-00001-of-00002.safetensors"},
                                                      {"c", "model-00002-of-00002.safetensors"}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_TRUE(ckpt->contains("c"));
    EXPECT_FALSE(ckpt->contains("d"));
    auto c = ckpt->tensor("c");
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    EXPECT_EQ(c->dtype, DType::kBF16);
    EXPECT_EQ(c->shape_string(), "[1, 2]");
    EXPECT_EQ(std::memcmp(c->data, bytes_of(4, 90).data(), 4), 0);
    auto a = ckpt->tensor("a");
    ASSERT_TRUE(a.is_ok());
    EXPECT_EQ(std::memcmp(a->data, bytes_of(8, 10).data(), 8), 0);
}

TEST_F(SafetensorsTest, Checkpoint_IndexTakesPrecedenceOverOtherFiles) {
    write("shard.safetensors", build_safetensors({{"a", "U8", {2}, bytes_of(2, 7)}}));
    // A stray consolidated file with a conflicting tensor, which the index does not name.
    write("model.safetensors", build_safetensors({{"a", "U8", {4}, bytes_of(4)}, {"zz", "U8", {1}, bytes_of(1)}}));
    write("model.safetensors.index.json", index_json({{"a", "shard.safetensors"}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"a"}));
    EXPECT_EQ(ckpt->tensor("a")->shape[0], 2);
}

TEST_F(SafetensorsTest, Checkpoint_OpensFolderWithOnlyModelSafetensors) {
    write("model.safetensors", build_safetensors({{"w", "F16", {2, 2}, bytes_of(8)}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->dir(), dir_.string());
    EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"w"}));
    EXPECT_EQ(ckpt->tensor("w")->dtype, DType::kF16);
}

TEST_F(SafetensorsTest, Checkpoint_OpensSeveralFilesWithoutIndex) {
    write("part-b.safetensors", build_safetensors({{"y", "I32", {1}, bytes_of(4)}}));
    write("part-a.safetensors", build_safetensors({{"x", "I64", {1}, bytes_of(8)}}));
    write("notes.txt", "not a tensor file");
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(ckpt->tensor("y")->dtype, DType::kI32);
}

TEST_F(SafetensorsTest, Checkpoint_RejectsMissingShardNamingItAndTheIndex) {
    write("s1.safetensors", build_safetensors({{"a", "U8", {1}, bytes_of(1)}}));
    write("model.safetensors.index.json", index_json({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(ckpt.is_ok());
    EXPECT_THAT(ckpt.status().message(), HasSubstr("s2.safetensors"));
    EXPECT_THAT(ckpt.status().message(), HasSubstr("model.safetensors.index.json"));
}

TEST_F(SafetensorsTest, Checkpoint_RejectsTensorMissingFromItsShard) {
    write("s1.safetensors", build_safetensors({{"a", "U8", {1}, bytes_of(1)}}));
    write("model.safetensors.index.json", index_json({{"a", "s1.safetensors"}, {"ghost", "s1.safetensors"}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(ckpt.is_ok());
    EXPECT_THAT(ckpt.status().message(), HasSubstr("'ghost'"));
    EXPECT_THAT(ckpt.status().message(), HasSubstr("s1.safetensors"));
}

TEST_F(SafetensorsTest, Checkpoint_RejectsTensorInTwoShards) {
    write("s1.safetensors", build_safetensors({{"a", "U8", {1}, bytes_of(1)}, {"b", "U8", {1}, bytes_of(1)}}));
    write("s2.safetensors", build_safetensors({{"b", "U8", {1}, bytes_of(1)}}));
    write("model.safetensors.index.json", index_json({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}));
    auto indexed = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(indexed.is_ok());
    EXPECT_THAT(indexed.status().message(), HasSubstr("'b'"));
    EXPECT_THAT(indexed.status().message(), HasSubstr("two"));

    fs::remove(dir_ / "model.safetensors.index.json");
    auto unindexed = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(unindexed.is_ok());
    EXPECT_THAT(unindexed.status().message(), HasSubstr("'b'"));
    EXPECT_THAT(unindexed.status().message(), HasSubstr("s1.safetensors"));
    EXPECT_THAT(unindexed.status().message(), HasSubstr("s2.safetensors"));
}

TEST_F(SafetensorsTest, Checkpoint_TensorOnAbsentNameIsError) {
    write("model.safetensors", build_safetensors({{"w", "U8", {1}, bytes_of(1)}}));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok());
    auto t = ckpt->tensor("model.norm.weight");
    ASSERT_FALSE(t.is_ok());
    EXPECT_EQ(t.status().message(), dir_.string() + ": tensor 'model.norm.weight' missing from the checkpoint");
}

TEST_F(SafetensorsTest, Checkpoint_RejectsEmptyFolder) {
    write("config.json", "{}");
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(ckpt.is_ok());
    EXPECT_THAT(ckpt.status().message(), HasSubstr(dir_.string()));
    EXPECT_THAT(ckpt.status().message(), HasSubstr("safetensors"));
    EXPECT_FALSE(Checkpoint::open_dir((dir_ / "no_such_dir").string()).is_ok());
}

TEST_F(SafetensorsTest, Checkpoint_RejectsMalformedIndex) {
    write("s1.safetensors", build_safetensors({{"a", "U8", {1}, bytes_of(1)}}));
    std::string index = write("model.safetensors.index.json", R"({"metadata": {}})");
    auto no_map = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(no_map.is_ok());
    EXPECT_THAT(no_map.status().message(), HasSubstr(index));
    EXPECT_THAT(no_map.status().message(), HasSubstr("weight_map"));

    write("model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
    auto bad_value = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(bad_value.is_ok());
    EXPECT_THAT(bad_value.status().message(), HasSubstr("'a'"));

    write("model.safetensors.index.json", R"({"weight_map": )");
    auto bad_json = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(bad_json.is_ok());
    EXPECT_THAT(bad_json.status().message(), HasSubstr(index));
}

TEST_F(SafetensorsTest, Checkpoint_ReportsAMalformedShardByItsPath) {
    std::string bad = write("model.safetensors", raw_safetensors("{", ""));
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(ckpt.is_ok());
    EXPECT_THAT(ckpt.status().message(), HasSubstr(bad));
}

}  // namespace
}  // namespace taco
