#include "io/zip_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "torch_bin_builder.h"

namespace taco {
namespace {

using testing::build_zip;
using ::testing::HasSubstr;
using testing::ZipOptions;
using testing::ZipRecord;

std::span<const uint8_t> span_of(const std::string& bytes) {
    return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

std::string text_of(std::span<const uint8_t> bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void expect_error(const std::string& archive, const std::string& part) {
    auto zip = ZipReader::parse("x.bin", span_of(archive));
    ASSERT_FALSE(zip.is_ok());
    EXPECT_THAT(zip.status().message(), HasSubstr("x.bin: "));
    EXPECT_THAT(zip.status().message(), HasSubstr(part));
}

// Little-endian patch of `n` bytes at `pos`.
void patch(std::string& bytes, size_t pos, uint64_t value, int n) {
    for (int i = 0; i < n; ++i) bytes[pos + i] = char((value >> (8 * i)) & 0xff);
}

size_t find_sig(const std::string& bytes, uint32_t sig) {
    std::string needle(4, '\0');
    patch(needle, 0, sig, 4);
    return bytes.rfind(needle);
}

const std::vector<ZipRecord> kRecords = {
    {"a/data.pkl", "pickle bytes"}, {"a/data/0", std::string(40, '\x7f')}, {"a/empty", ""}};

TEST(ZipReaderTest, ZipReader_ReadsStoredEntriesAtTheirAlignedOffsets) {
    std::string archive = build_zip(kRecords);
    auto zip = ZipReader::parse("x.bin", span_of(archive));
    ASSERT_TRUE(zip.is_ok()) << zip.status().message();
    EXPECT_EQ(zip->entries().size(), 3u);
    const ZipEntry* data = zip->find("a/data/0");
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(data->data_offset % 64, 0u);
    EXPECT_EQ(text_of(zip->contents(*data)), std::string(40, '\x7f'));
    auto pickle = zip->verified_contents(*zip->find("a/data.pkl"));
    ASSERT_TRUE(pickle.is_ok()) << pickle.status().message();
    EXPECT_EQ(text_of(*pickle), "pickle bytes");
    EXPECT_EQ(zip->find("a/empty")->size, 0u);
    EXPECT_EQ(zip->find("a/missing"), nullptr);
}

TEST(ZipReaderTest, ZipReader_ReadsZip64SizesAndOffsets) {
    std::string archive = build_zip(kRecords, ZipOptions{.zip64 = true});
    auto zip = ZipReader::parse("x.bin", span_of(archive));
    ASSERT_TRUE(zip.is_ok()) << zip.status().message();
    EXPECT_EQ(text_of(zip->contents(*zip->find("a/data.pkl"))), "pickle bytes");
    EXPECT_EQ(zip->find("a/data/0")->size, 40u);
}

TEST(ZipReaderTest, ZipReader_Crc32MatchesTheStandardCheckValue) {
    EXPECT_EQ(crc32(span_of("123456789")), 0xcbf43926u);
}

TEST(ZipReaderTest, ZipReader_RejectsCompressedEntryNamingIt) {
    expect_error(build_zip({{"a/data.pkl", "xx", /*method=*/8}}), "'a/data.pkl' is compressed (method 8, deflate)");
}

TEST(ZipReaderTest, ZipReader_RejectsEncryptedEntry) {
    expect_error(build_zip({{"a/data.pkl", "xx", 0, /*flags=*/1}}), "'a/data.pkl' is encrypted");
}

TEST(ZipReaderTest, ZipReader_RejectsNonZipInput) {
    expect_error("short", "not a ZIP archive");
    expect_error(std::string(100, 'x'), "no end-of-central-directory record");
}

TEST(ZipReaderTest, ZipReader_RejectsDirectoryOutsideTheArchive) {
    std::string archive = build_zip(kRecords);
    size_t end = find_sig(archive, 0x06054b50);
    patch(archive, end + 16, archive.size() + 5, 4);
    expect_error(archive, "central directory");
}

TEST(ZipReaderTest, ZipReader_RejectsBadCentralDirectorySignature) {
    std::string archive = build_zip(kRecords);
    size_t end = find_sig(archive, 0x06054b50);
    size_t dir = archive[end + 16] & 0xff;
    dir |= size_t(uint8_t(archive[end + 17])) << 8;
    archive[dir] = 'Q';
    expect_error(archive, "central directory entry 0");
}

TEST(ZipReaderTest, ZipReader_RejectsEntryCountLargerThanTheDirectory) {
    std::string archive = build_zip(kRecords);
    size_t end = find_sig(archive, 0x06054b50);
    patch(archive, end + 10, 5000, 2);
    expect_error(archive, "claims 5000 entries");
}

TEST(ZipReaderTest, ZipReader_RejectsLocalHeaderOffsetPastTheEnd) {
    std::string archive = build_zip(kRecords);
    size_t central = archive.find(std::string("PK\x01\x02", 4));
    patch(archive, central + 42, archive.size() - 10, 4);
    expect_error(archive, "local header offset");
}

TEST(ZipReaderTest, ZipReader_RejectsDataPastTheEnd) {
    std::string archive = build_zip({{"a/data/0", "abc"}});
    size_t central = archive.find(std::string("PK\x01\x02", 4));
    patch(archive, central + 20, 1u << 30, 4);
    patch(archive, central + 24, 1u << 30, 4);
    expect_error(archive, "past the end of the archive");
}

TEST(ZipReaderTest, ZipReader_RejectsZip64MarkerWithoutZip64Field) {
    std::string archive = build_zip({{"a/data/0", "abc"}});
    size_t central = archive.find(std::string("PK\x01\x02", 4));
    patch(archive, central + 24, 0xffffffff, 4);
    expect_error(archive, "no ZIP64 extra field");
}

TEST(ZipReaderTest, ZipReader_RejectsDuplicateNames) {
    expect_error(build_zip({{"a/x", "1"}, {"a/x", "2"}}), "'a/x' appears twice");
}

TEST(ZipReaderTest, ZipReader_RejectsLocalHeaderNamingAnotherEntry) {
    std::string archive = build_zip({{"a/x", "1"}});
    archive[30 + 2] = 'y';  // the local copy of the name
    expect_error(archive, "local header names a different entry");
}

TEST(ZipReaderTest, ZipReader_VerifiedContentsDetectsCorruption) {
    std::string archive = build_zip(kRecords);
    auto clean = ZipReader::parse("x.bin", span_of(archive));
    ASSERT_TRUE(clean.is_ok());
    archive[clean->find("a/data.pkl")->data_offset] ^= 1;
    auto zip = ZipReader::parse("x.bin", span_of(archive));
    ASSERT_TRUE(zip.is_ok());
    auto pickle = zip->verified_contents(*zip->find("a/data.pkl"));
    ASSERT_FALSE(pickle.is_ok());
    EXPECT_THAT(pickle.status().message(), HasSubstr("'a/data.pkl' is corrupt"));
}

// Every prefix of a valid archive, and every single-byte change, is an error or an archive whose entries all lie
// inside the bytes; nothing is read out of bounds (run under -fsanitize=address to check the reads).
TEST(ZipReaderTest, ZipReader_SurvivesEveryTruncationAndByteCorruption) {
    for (bool zip64 : {false, true}) {
        std::string archive = build_zip(kRecords, ZipOptions{.zip64 = zip64, .data_alignment = 8});
        for (size_t n = 0; n < archive.size(); ++n) {
            std::string prefix = archive.substr(0, n);
            auto zip = ZipReader::parse("x.bin", span_of(prefix));
            EXPECT_FALSE(zip.is_ok()) << n;
        }
        for (size_t pos = 0; pos < archive.size(); ++pos) {
            for (uint8_t value : {uint8_t(0x00), uint8_t(0xff), uint8_t(archive[pos] ^ 0x40)}) {
                std::string bad = archive;
                bad[pos] = char(value);
                auto zip = ZipReader::parse("x.bin", span_of(bad));
                if (!zip.is_ok()) continue;
                for (const auto& [name, entry] : zip->entries()) {
                    ASSERT_LE(entry.data_offset + entry.size, bad.size()) << pos;
                }
            }
        }
    }
}

}  // namespace
}  // namespace taco
