#include "io/torch_bin_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "io/safetensors.h"
#include "scratch_dir_test.h"
#include "torch_bin_builder.h"

namespace taco {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::state_dict_pickle;
using testing::torch_archive;
using testing::ZipOptions;

const fs::path kFixtures = fs::path(TACO_SOURCE_DIR) / "tests/data/io/torch_bin";

std::string floats(std::initializer_list<float> values) {
    std::string out(values.size() * 4, '\0');
    std::memcpy(out.data(), values.begin(), out.size());
    return out;
}

double element(const TensorView& view, size_t i) {
    switch (view.dtype) {
        case DType::kI64: return double(view.as<int64_t>()[i]);
        case DType::kI32: return double(view.as<int32_t>()[i]);
        case DType::kI8: return double(view.as<int8_t>()[i]);
        case DType::kU8: return double(view.as<uint8_t>()[i]);
        default: return double(load_as_f32(view.data, view.dtype, i));
    }
}

// Every tensor that expected.json (written by tools/make_torch_bin_fixtures.py) lists has its dtype, shape
// and values.
void expect_matches_fixture(const Checkpoint& ckpt, const fs::path& expected_path) {
    auto expected = read_json_file(expected_path.string());
    ASSERT_TRUE(expected.is_ok()) << expected.status().message();
    std::vector<std::string> names;
    for (const auto& [name, spec] : expected->items()) {
        SCOPED_TRACE(name);
        names.push_back(name);
        auto view = ckpt.tensor(name);
        ASSERT_TRUE(view.is_ok()) << view.status().message();
        EXPECT_EQ(std::string(dtype_name(view->dtype)), spec["dtype"].get<std::string>());
        std::vector<int64_t> shape(view->shape.begin(), view->shape.begin() + view->ndim);
        EXPECT_EQ(shape, spec["shape"].get<std::vector<int64_t>>());
        const auto& values = spec["values"];
        ASSERT_EQ(size_t(view->numel()), values.size());
        for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(element(*view, i), values[i].get<double>()) << i;
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(ckpt.tensor_names(), names);
}

class TorchBinFileTest : public testing_util::ScratchDirTest {
protected:
    void expect_open_error(const std::string& bytes, const std::string& part) {
        std::string path = write("pytorch_model.bin", bytes);
        auto file = TorchBinFile::open(path);
        ASSERT_FALSE(file.is_ok());
        EXPECT_THAT(file.status().message(), HasSubstr(path));
        EXPECT_THAT(file.status().message(), HasSubstr(part));
    }
};

TEST_F(TorchBinFileTest, TorchBinFile_ReadsEveryDtypeOfARealTorchSave) {
    auto ckpt = Checkpoint::open_dir((kFixtures / "every_dtype").string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    expect_matches_fixture(*ckpt, kFixtures / "every_dtype/expected.json");
}

TEST_F(TorchBinFileTest, TorchBinFile_SharedStoragesAreViewsOfTheSameBytes) {
    auto ckpt = Checkpoint::open_dir((kFixtures / "every_dtype").string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->tensor("f16")->data, ckpt->tensor("f16_tied")->data);
    EXPECT_EQ(ckpt->tensor("wide.row1")->as<float>(), ckpt->tensor("wide")->as<float>() + 4);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ckpt->tensor("wide")->data) % 64, 0u);  // torch aligns records
}

TEST_F(TorchBinFileTest, TorchBinFile_ReadsParametersAndProtocol4) {
    for (const char* name : {"parameter", "protocol4"}) {
        SCOPED_TRACE(name);
        auto ckpt = Checkpoint::open_dir((kFixtures / name).string());
        ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
        expect_matches_fixture(*ckpt, kFixtures / name / "expected.json");
    }
}

TEST_F(TorchBinFileTest, TorchBinFile_OpensUnsupportedDtypeButRefusesToViewIt) {
    auto file = TorchBinFile::open((kFixtures / "float64/pytorch_model.bin").string());
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_TRUE((*file)->view("ok").is_ok());
    auto f64 = (*file)->view("f64");
    ASSERT_FALSE(f64.is_ok());
    EXPECT_THAT(f64.status().message(), HasSubstr("tensor 'f64' has torch dtype float64"));
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsNonContiguousTensorFromTorch) {
    auto file = TorchBinFile::open((kFixtures / "transposed/pytorch_model.bin").string());
    ASSERT_FALSE(file.is_ok());
    EXPECT_THAT(file.status().message(), HasSubstr("tensor 't': size [3, 2] with stride [1, 3] is not contiguous"));
}

TEST_F(TorchBinFileTest, TorchBinFile_ReadsLegacyFormatIntoAlignedMemory) {
    auto ckpt = Checkpoint::open_dir((kFixtures / "legacy").string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    expect_matches_fixture(*ckpt, kFixtures / "legacy/expected.json");
    EXPECT_EQ(ckpt->tensor("half")->data, ckpt->tensor("half_tied")->data);
    EXPECT_EQ(ckpt->tensor("wide.row2")->as<float>(), ckpt->tensor("wide")->as<float>() + 8);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ckpt->tensor("wide")->data) % 64, 0u);
}

// The legacy stream by hand: magic number, protocol 1001, sys_info, the state dict, the keys, the storages.
std::string legacy_stream(const std::string& state_dict, const std::vector<std::string>& keys,
                          const std::string& storages, bool little_endian = true) {
    std::string out("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
    out += testing::PickleWriter().proto().integer(1001).op('.').bytes();
    out += testing::PickleWriter()
               .proto()
               .op('}')
               .str("little_endian")
               .op(little_endian ? 0x88 : 0x89)
               .op('s')
               .op('.')
               .bytes();
    out += state_dict;
    testing::PickleWriter list;
    list.proto().op(']').mark();
    for (const std::string& key : keys) list.str(key);
    out += list.op('e').op('.').bytes();
    return out + storages;
}

std::string counted(uint64_t numel, const std::string& bytes) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = char((numel >> (8 * i)) & 0xff);
    return out + bytes;
}

TEST_F(TorchBinFileTest, TorchBinFile_ReadsCraftedLegacyStream) {
    std::string sd = state_dict_pickle({{"w", "FloatStorage", "9", 2, 1, {1}}});
    auto file = TorchBinFile::open(write("pytorch_model.bin", legacy_stream(sd, {"9"}, counted(2, floats({4, 5})))));
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    EXPECT_EQ((*file)->view("w")->as<float>()[0], 5.0f);
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsMalformedLegacyStreams) {
    std::string sd = state_dict_pickle({{"w", "FloatStorage", "9", 2, 0, {2}}});
    expect_open_error(legacy_stream(sd, {"9"}, counted(2, floats({4, 5})), /*little_endian=*/false),
                      "big-endian checkpoints are not supported");
    expect_open_error(legacy_stream(sd, {"9"}, counted(3, floats({4, 5}))), "storage '9' of 3 elements runs past");
    expect_open_error(legacy_stream(sd, {"9"}, counted(1, floats({4}))), "storage '9' holds 4 bytes");
    expect_open_error(legacy_stream(sd, {}, ""), "tensor 'w': storage '9' is missing");
    expect_open_error(legacy_stream(sd, {"8"}, counted(2, floats({4, 5}))), "storage '8' is not used by any tensor");
    expect_open_error(legacy_stream(sd, {"9"}, "\x02"), "truncated before its size");
    // A storage view (torch < 0.4): the sixth persistent id field is a tuple instead of None.
    testing::PickleWriter view;
    view.proto().op('}').str("w").global("torch._utils", "_rebuild_tensor_v2").mark().mark().str("storage");
    view.global("torch", "FloatStorage").str("9").str("cpu").integer(2).str("8").integer(0).integer(2).op(0x87);
    view.tuple().op('Q');
    expect_open_error(legacy_stream(view.bytes(), {"9"}, counted(2, floats({4, 5}))), "storage view");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsEveryTruncationOfALegacyFile) {
    std::string bytes = read_text_file((kFixtures / "legacy/pytorch_model.bin").string()).value();
    for (size_t n = 0; n < bytes.size(); ++n) {
        std::string path = write("cut.bin", bytes.substr(0, n));
        EXPECT_FALSE(TorchBinFile::open(path).is_ok()) << n;
    }
}

TEST_F(TorchBinFileTest, TorchBinFile_ReadsCraftedZip64Archive) {
    std::string archive = torch_archive(state_dict_pickle({{"w", "FloatStorage", "0", 3, 1, {2}}}),
                                        {{"0", floats({1, 2, 3})}}, ZipOptions{.zip64 = true});
    auto file = TorchBinFile::open(write("pytorch_model.bin", archive));
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto w = (*file)->view("w");
    ASSERT_TRUE(w.is_ok());
    EXPECT_EQ(w->as<float>()[0], 2.0f);
    EXPECT_EQ(w->as<float>()[1], 3.0f);
}

// torch >= 2.1 pickles float8 tensors as _rebuild_tensor_v3(UntypedStorage (numel in bytes), offset, size,
// stride, requires_grad, hooks, dtype).
std::string float8_pickle(const char* storage_type, const char* dtype) {
    testing::PickleWriter w;
    w.proto().op('}').str("f8").global("torch._utils", "_rebuild_tensor_v3").mark();
    w.mark().str("storage").global("torch", storage_type).str("0").str("cpu").integer(4).tuple().op('Q');
    w.integer(1).integer(3).op(0x85).integer(1).op(0x85).op(0x89).global("collections", "OrderedDict").op(')');
    w.op('R').global("torch", dtype).tuple().op('R').op('s').op('.');
    return w.bytes();
}

TEST_F(TorchBinFileTest, TorchBinFile_ReadsFloat8TensorsOfRebuildTensorV3) {
    auto file =
        TorchBinFile::open(write("pytorch_model.bin", torch_archive(float8_pickle("UntypedStorage", "float8_e4m3fn"),
                                                                    {{"0", "\x01\x02\x03\x04"}})));
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto f8 = (*file)->view("f8");
    ASSERT_TRUE(f8.is_ok()) << f8.status().message();
    EXPECT_EQ(f8->dtype, DType::kF8E4M3);
    EXPECT_EQ(f8->shape_string(), "[3]");
    EXPECT_EQ(f8->as<uint8_t>()[0], 2);
    expect_open_error(torch_archive(float8_pickle("FloatStorage", "float8_e5m2"), {{"0", floats({1, 2, 3, 4})}}),
                      "_rebuild_tensor_v3 of a typed storage");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsMissingStorageRecord) {
    expect_open_error(torch_archive(state_dict_pickle({{"w", "FloatStorage", "7", 2, 0, {2}}}), {}),
                      "tensor 'w': storage record 'archive/data/7' is missing");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsTensorPastTheEndOfItsStorage) {
    expect_open_error(
        torch_archive(state_dict_pickle({{"w", "FloatStorage", "0", 3, 2, {2}}}), {{"0", floats({1, 2, 3})}}),
        "tensor 'w': offset 2 + size [2] runs past the end of storage '0' (3 elements)");
    // An offset so large that offset * element size overflows.
    expect_open_error(torch_archive(state_dict_pickle({{"w", "FloatStorage", "0", 3, int64_t(1) << 62, {1}}}),
                                    {{"0", floats({1, 2, 3})}}),
                      "runs past the end of storage");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsStorageOfTheWrongSize) {
    expect_open_error(
        torch_archive(state_dict_pickle({{"w", "FloatStorage", "0", 4, 0, {2}}}), {{"0", floats({1, 2, 3})}}),
        "storage '0' holds 12 bytes, but 4 elements of FloatStorage need 16");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsOneStorageWithTwoTypes) {
    expect_open_error(
        torch_archive(state_dict_pickle({{"a", "FloatStorage", "0", 2, 0, {2}}, {"b", "IntStorage", "0", 2, 0, {2}}}),
                      {{"0", floats({1, 2})}}),
        "storage '0' is 2 x IntStorage here but 2 x FloatStorage elsewhere");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsNonContiguousStrides) {
    expect_open_error(torch_archive(state_dict_pickle({{"w", "FloatStorage", "0", 4, 0, {2, 2}, {1, 2}}}),
                                    {{"0", floats({1, 2, 3, 4})}}),
                      "is not contiguous");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsForbiddenGlobalNamingTheFile) {
    std::string pickle =
        testing::PickleWriter().proto().global("os", "system").str("echo").op(0x85).op('R').op('.').bytes();
    expect_open_error(torch_archive(pickle, {}),
                      "refuses to load global 'os.system' (only tensor records are allowed)");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsCompressedPickle) {
    expect_open_error(testing::build_zip({{"archive/data.pkl", "x", 8}}), "'archive/data.pkl' is compressed");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsArchiveWithoutDataPkl) {
    expect_open_error(testing::build_zip({{"archive/version", "3\n"}}), "no <root>/data.pkl record");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsBigEndianByteorder) {
    std::string pickle = state_dict_pickle({});
    expect_open_error(testing::build_zip({{"archive/data.pkl", pickle}, {"archive/byteorder", "big"}}),
                      "big-endian checkpoints are not supported");
}

TEST_F(TorchBinFileTest, TorchBinFile_RejectsEveryTruncationOfARealFile) {
    std::string bytes = read_text_file((kFixtures / "every_dtype/pytorch_model.bin").string()).value();
    for (size_t n = 0; n < bytes.size(); n += 7) {
        std::string path = write("cut.bin", bytes.substr(0, n));
        EXPECT_FALSE(TorchBinFile::open(path).is_ok()) << n;
    }
}

// Any single changed byte of a real file (ZIP or legacy) is an error or a file whose every view lies inside
// memory it owns (the reads below trip -fsanitize=address otherwise).
TEST_F(TorchBinFileTest, TorchBinFile_SurvivesSingleByteCorruptionOfRealFiles) {
    for (const char* name : {"every_dtype", "legacy"}) {
        std::string bytes = read_text_file((kFixtures / name / "pytorch_model.bin").string()).value();
        int num_opened = 0;
        for (size_t pos = 0; pos < bytes.size(); pos += 3) {  // every third byte keeps the test quick
            std::string bad = bytes;
            bad[pos] = char(~uint8_t(bad[pos]));
            auto file = TorchBinFile::open(write("bad.bin", bad));
            if (!file.is_ok()) continue;
            ++num_opened;
            uint8_t sum = 0;
            for (const std::string& tensor : (*file)->tensor_names()) {
                auto view = (*file)->view(tensor);
                if (!view.is_ok() || view->nbytes() == 0) continue;
                sum += view->as<uint8_t>()[0] + view->as<uint8_t>()[view->nbytes() - 1];
            }
            (void)sum;
        }
        EXPECT_GT(num_opened, 0) << name;  // changes inside storage bytes are harmless
    }
}

// --- Checkpoint over pytorch_model.bin folders ---

TEST_F(TorchBinFileTest, Checkpoint_OpensShardedBinThroughIndex) {
    auto ckpt = Checkpoint::open_dir((kFixtures / "sharded").string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    expect_matches_fixture(*ckpt, kFixtures / "sharded/expected.json");
}

TEST_F(TorchBinFileTest, Checkpoint_PrefersSafetensorsOverBin) {
    fs::copy_file(kFixtures / "parameter/pytorch_model.bin", dir_ / "pytorch_model.bin");
    std::string header = R"({"st":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
    std::string st(8, '\0');
    st[0] = char(header.size());
    write("model.safetensors", st + header + "x");
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(ckpt.is_ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->tensor_names(), (std::vector<std::string>{"st"}));

    fs::remove(dir_ / "model.safetensors");
    auto bin = Checkpoint::open_dir(dir_.string());
    ASSERT_TRUE(bin.is_ok()) << bin.status().message();
    EXPECT_EQ(bin->tensor_names(), (std::vector<std::string>{"p"}));
}

TEST_F(TorchBinFileTest, Checkpoint_RejectsBinIndexNamingAMissingShard) {
    fs::copy_file(kFixtures / "sharded/pytorch_model-00001-of-00002.bin", dir_ / "pytorch_model-00001-of-00002.bin");
    fs::copy_file(kFixtures / "sharded/pytorch_model.bin.index.json", dir_ / "pytorch_model.bin.index.json");
    auto ckpt = Checkpoint::open_dir(dir_.string());
    ASSERT_FALSE(ckpt.is_ok());
    EXPECT_THAT(ckpt.status().message(), HasSubstr("pytorch_model-00002-of-00002.bin"));
    EXPECT_THAT(ckpt.status().message(), HasSubstr("pytorch_model.bin.index.json"));
}

}  // namespace
}  // namespace taco
