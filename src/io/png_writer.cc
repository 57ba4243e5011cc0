#include "io/png_writer.h"

#include <algorithm>
#include <span>

#include "core/check.h"
#include "io/zip_reader.h"

namespace taco::io {
namespace {

void put_u32_be(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(char((v >> shift) & 0xff));
}

// A chunk: length, type, data, CRC of type and data.
void put_chunk(std::string& out, const char* type, const std::string& data) {
    put_u32_be(out, uint32_t(data.size()));
    std::string body(type, 4);
    body += data;
    out += body;
    put_u32_be(out, crc32(std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size())));
}

}  // namespace

RgbImage::RgbImage(int w, int h, uint32_t rgb) : width(w), height(h) {
    TACO_CHECK_MSG(w > 0 && h > 0 && w <= 16384 && h <= 16384, "RgbImage: {} x {} pixels", w, h);
    pixels.resize(size_t(w) * size_t(h) * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) set(x, y, rgb);
}

void RgbImage::set(int x, int y, uint32_t rgb) {
    if (x < 0 || y < 0 || x >= width || y >= height) return;
    uint8_t* p = &pixels[(size_t(y) * size_t(width) + size_t(x)) * 3];
    p[0] = uint8_t(rgb >> 16), p[1] = uint8_t(rgb >> 8), p[2] = uint8_t(rgb);
}

uint32_t RgbImage::at(int x, int y) const {
    const uint8_t* p = &pixels[(size_t(y) * size_t(width) + size_t(x)) * 3];
    return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2];
}

uint32_t adler32_of(const uint8_t* data, size_t size) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < size; ++i) {
        a = (a + data[i]) % 65521;
        b = (b + a) % 65521;
    }
    return b << 16 | a;
}

std::string encode_png(const RgbImage& image) {
    // The filtered scanlines: filter type 0 (none) before each row.
    std::string raw;
    const size_t row = size_t(image.width) * 3;
    raw.reserve((row + 1) * size_t(image.height));
    for (int y = 0; y < image.height; ++y) {
        raw.push_back('\0');
        raw.append(reinterpret_cast<const char*>(&image.pixels[size_t(y) * row]), row);
    }
    // zlib: CMF/FLG (deflate, 32K window, no dictionary; 0x7801 is a multiple of 31), stored blocks of at most 65535
    // bytes (BFINAL on the last; LEN and its complement little-endian), Adler-32 of the raw data.
    std::string z = {char(0x78), char(0x01)};
    size_t offset = 0;
    do {
        const size_t n = std::min<size_t>(65535, raw.size() - offset);
        const bool last = offset + n == raw.size();
        z.push_back(char(last ? 1 : 0));
        z.push_back(char(n & 0xff)), z.push_back(char(n >> 8));
        z.push_back(char(~n & 0xff)), z.push_back(char((~n >> 8) & 0xff));
        z.append(raw, offset, n);
        offset += n;
    } while (offset < raw.size());
    put_u32_be(z, adler32_of(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));

    std::string png = "\x89PNG\r\n\x1a\n";
    std::string header;
    put_u32_be(header, uint32_t(image.width));
    put_u32_be(header, uint32_t(image.height));
    header += std::string{char(8), char(2), char(0), char(0), char(0)};  // 8 bits, RGB, deflate, filter 0, no interlace
    put_chunk(png, "IHDR", header);
    put_chunk(png, "IDAT", z);
    put_chunk(png, "IEND", "");
    return png;
}

}  // namespace taco::io
