// io/png_writer.h: the checksums against their published check values, and encoded images read back by a small
// reader of our own (chunks, CRCs, the stored deflate blocks, Adler-32, scanlines). The CLI test of `bench --plot`
// reads a chart back with Python's zlib as an independent reader.
#include "io/png_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <span>
#include <string>

#include "io/zip_reader.h"

namespace taco::io {
namespace {

uint32_t be32(const std::string& s, size_t at) {
    return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
           uint8_t(s[at + 3]);
}

struct Decoded {
    int width = 0, height = 0;
    std::string raw;  // the inflated scanlines
    std::vector<std::string> chunk_types;
};

// Reads what encode_png writes: every chunk's CRC checked, the zlib stream of stored blocks inflated.
Decoded decode(const std::string& png) {
    Decoded d;
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    std::string idat;
    for (size_t at = 8; at + 12 <= png.size();) {
        const uint32_t len = be32(png, at);
        const std::string type = png.substr(at + 4, 4), data = png.substr(at + 8, len);
        const std::string body = png.substr(at + 4, 4 + len);
        EXPECT_EQ(be32(png, at + 8 + len), crc32(std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size())))
            << type;
        d.chunk_types.push_back(type);
        if (type == "IHDR") {
            d.width = int(be32(data, 0)), d.height = int(be32(data, 4));
            EXPECT_EQ(data.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
        }
        if (type == "IDAT") idat += data;
        at += 12 + len;
    }
    EXPECT_EQ((uint8_t(idat[0]) * 256 + uint8_t(idat[1])) % 31, 0);  // zlib header check bits
    size_t at = 2;
    for (bool last = false; !last && at + 5 <= idat.size();) {
        last = (idat[at] & 1) != 0;
        EXPECT_EQ(idat[at] & 6, 0);  // stored
        const size_t n = uint8_t(idat[at + 1]) | size_t(uint8_t(idat[at + 2])) << 8;
        const size_t nn = uint8_t(idat[at + 3]) | size_t(uint8_t(idat[at + 4])) << 8;
        EXPECT_EQ(n ^ nn, 0xffffu);
        d.raw += idat.substr(at + 5, n);
        at += 5 + n;
    }
    EXPECT_EQ(be32(idat, at), adler32_of(reinterpret_cast<const uint8_t*>(d.raw.data()), d.raw.size()));
    EXPECT_EQ(at + 4, idat.size());
    return d;
}

TEST(PngWriter, ChecksumsHaveTheirPublishedCheckValues) {
    const char* digits = "123456789";
    EXPECT_EQ(crc32(std::span(reinterpret_cast<const uint8_t*>(digits), 9)), 0xcbf43926u);  // the chunks' CRC
    const char* wiki = "Wikipedia";
    EXPECT_EQ(adler32_of(reinterpret_cast<const uint8_t*>(wiki), 9), 0x11e60398u);
    EXPECT_EQ(adler32_of(nullptr, 0), 1u);
}

TEST(PngWriter, AnImageReadsBackPixelForPixel) {
    std::mt19937 rng(3);
    for (auto [w, h] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{300, 200}}) {  // the last: two stored blocks
        RgbImage img(w, h);
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) img.set(x, y, rng() & 0xffffff);
        img.set(-1, 0, 0), img.set(w, h, 0);  // outside: ignored
        const Decoded d = decode(encode_png(img));
        ASSERT_EQ(d.width, w);
        ASSERT_EQ(d.height, h);
        EXPECT_EQ(d.chunk_types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
        ASSERT_EQ(d.raw.size(), size_t(w * 3 + 1) * size_t(h));
        for (int y = 0; y < h; ++y) {
            const size_t row = size_t(y) * size_t(w * 3 + 1);
            EXPECT_EQ(d.raw[row], '\0') << "filter of row " << y;
            EXPECT_EQ(std::memcmp(d.raw.data() + row + 1, img.pixels.data() + size_t(y) * size_t(w) * 3, size_t(w) * 3),
                      0)
                << "row " << y;
        }
    }
}

}  // namespace
}  // namespace taco::io
