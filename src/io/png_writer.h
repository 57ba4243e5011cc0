// A PNG encoder for plain RGB images (8 bits a channel, no interlace): what `taco_llm bench --plot` writes. The image
// data is stored in zlib's uncompressed (stored) deflate blocks: no compression library is needed, and a chart of a
// few hundred kilobytes is small enough. Every chunk carries its CRC-32 and the zlib stream its Adler-32, so any PNG
// reader takes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace taco::io {

struct RgbImage {
    int width = 0, height = 0;
    std::vector<uint8_t> pixels;  // [height][width][3], row-major

    RgbImage(int w, int h, uint32_t rgb = 0xffffff);
    // Sets one pixel (0xRRGGBB); coordinates outside the image are ignored.
    void set(int x, int y, uint32_t rgb);
    uint32_t at(int x, int y) const;
};

// The PNG file's bytes.
std::string encode_png(const RgbImage& image);

// Adler-32 of `data` (zlib's checksum; the chunks' CRC-32 is io/zip_reader.h's crc32): exposed for the tests.
uint32_t adler32_of(const uint8_t* data, size_t size);

}  // namespace taco::io
